"""Toolchains: which compiler (jax, jaxlib, libtpu) an estimate comes from and what each compiles
(config `toolchains`; docs/toolchains.md). Without the section there is one, `current`, the pipeline's own.
"""
import os
from pathlib import Path

from tpu_matmul_repro.experiments.core.cache_dirs import user_cache
from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.experiments.core.jobs import Toolchain

DEFAULT = {"current": {"pipeline": True}}
CACHE_VARIABLE = "TPU_MATMUL_REPRO_TOOLCHAINS"  # overrides the cache folder of toolchain environments


class ToolchainError(ValueError):
    """A toolchain setting that cannot work; the message names the key and the value."""


def parse(config: dict) -> dict[str, Toolchain]:
    """The config's toolchains (schema-checked already), checked further; raises ToolchainError."""
    section = config.get("toolchains") or DEFAULT
    out = {}
    for name, spec in section.items():
        key = f"toolchains.{name}"
        if spec.get("pipeline") and "pins" in spec:
            raise ToolchainError(f"{key}: pipeline: true uses the pipeline's own environment "
                                 f"(requirements.txt); drop pins={spec['pins']!r} or pipeline")
        if not spec.get("pipeline") and "pins" not in spec:
            raise ToolchainError(f"{key}: needs pins (jax, jaxlib, libtpu) or pipeline: true")
        runs = spec.get("runs", "study")
        if spec.get("pipeline") and runs != "study":
            raise ToolchainError(f"{key}.runs: {runs!r}: the pipeline's own toolchain runs the whole study")
        targets = tuple(spec["targets"]) if "targets" in spec else None
        if runs == "published":
            wrong = [t for t in (targets or config["targets"]) if t != POST_CHIP]
            if wrong:
                raise ToolchainError(f"{key}.targets: {wrong!r}: runs: published compiles the post's "
                                     f"configurations, published for {[POST_CHIP]} only")
        estimates_for = tuple(spec.get("estimates_for", ()))
        if estimates_for and (spec.get("pipeline") or runs != "study" or targets):
            raise ToolchainError(f"{key}.estimates_for: {list(estimates_for)!r}: only for a toolchain with "
                                 "pins and runs: study, without targets (it runs the targets it is for)")
        out[name] = Toolchain(
            name=name, pins=tuple(sorted((spec.get("pins") or {}).items())), runs=runs, targets=targets,
            static_profile=spec.get("static_profile", False),
            environment=tuple(sorted((spec.get("environment") or {}).items())), estimates_for=estimates_for)
    pipeline = [t.name for t in out.values() if t.pipeline]
    if len(pipeline) != 1:
        raise ToolchainError(f"toolchains: exactly one toolchain must have pipeline: true "
                             f"(the pipeline's own environment), found {pipeline}")
    claimed = {}
    for toolchain in out.values():
        for target in toolchain.estimates_for:
            if target in claimed:
                raise ToolchainError(f"toolchains.{toolchain.name}.estimates_for: {target!r} is already "
                                     f"toolchains.{claimed[target]}'s: one compiler per target")
            claimed[target] = toolchain.name
    return out


def primary(config: dict) -> str:
    """The name of the pipeline's own toolchain: the one the existing figures and findings use."""
    return next(t.name for t in parse(config).values() if t.pipeline)


def served(config: dict) -> dict[str, str]:
    """target -> the toolchain whose estimates that target's figures and findings read, for the targets
    a toolchain other than the pipeline's own is `estimates_for` (the pipeline's own: all others)."""
    return served_by(parse(config))


def served_by(toolchains: dict[str, Toolchain]) -> dict[str, str]:
    """`served` of already parsed toolchains."""
    return {target: t.name for t in toolchains.values() for target in t.estimates_for}


def cache_dir(config: dict) -> Path:
    """Where toolchain environments live, outside results/: config `toolchain_cache_dir`, else
    $TPU_MATMUL_REPRO_TOOLCHAINS, else $XDG_CACHE_HOME (~/.cache)/tpu-matmul-repro/toolchains."""
    chosen = config.get("toolchain_cache_dir") or os.environ.get(CACHE_VARIABLE)
    if chosen:
        return Path(chosen).expanduser().resolve()
    return user_cache("toolchains")


def env_path(config: dict, toolchain: Toolchain) -> Path:
    return cache_dir(config) / f"{toolchain.name}-{toolchain.pins_hash()}"


