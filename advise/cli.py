"""advise SHAPE [SHAPE ...] [--dtype D] [--target T ...] [--csv | --json]"""
import argparse
import logging
import sys
from pathlib import Path

import pandas as pd

from tpu_matmul_repro.advise import model as advisor_model
from tpu_matmul_repro.advise import request, search, table
from tpu_matmul_repro.advise.request import AdviceError

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("v5e", "v6e", "v5p", "7x")  # v4: libtpu's static profiler crashes on it (no cycles)


def arguments(argv):
    p = argparse.ArgumentParser(prog="advise", description=__doc__.strip(),
                                epilog="Every number is an estimate for the target, never a measurement "
                                       "(docs/advisor.md).")
    p.add_argument("shapes", nargs="+", metavar="MxKxN", help="problem C[m, n] = A[m, k] @ B[k, n]")
    p.add_argument("--dtype", default="bfloat16", help="operand dtype (default bfloat16)")
    p.add_argument("--target", action="append", dest="targets", metavar="TARGET",
                   help=f"TPU generation, one of {', '.join(TARGETS)}; repeat for several (default v5e)")
    p.add_argument("--kernel", default="v5", help="blocked Pallas kernel (default v5: f32 accumulator)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--csv", action="store_true", help="CSV on stdout, every column")
    out.add_argument("--json", action="store_true", help="JSON records on stdout, every column")
    p.add_argument("--results", type=Path, default=ROOT / "results",
                   help="a pipeline run's results/ whose timing model to reuse (default ./results)")
    p.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml",
                   help="config for compile settings and toolchains (default config/config.yaml)")
    p.add_argument("-v", "--verbose", action="store_true", help="log the compiles on stderr")
    return p.parse_args(argv)


def compiler_for(target: str, config: dict) -> dict:
    """The compiler of `target`: the pipeline's own, or the toolchain serving it (7x: libtpu52),
    whose environment is built with pip on first use (experiments/compile_study/toolchain_env.py)."""
    from tpu_matmul_repro.experiments.plan import toolchains

    served = toolchains.served(config)
    if target not in served:
        return dict(toolchain=toolchains.primary(config), static_profile=True)
    from tpu_matmul_repro.experiments.compile_study import toolchain_env

    tc = toolchains.parse(config)[served[target]]
    try:
        manifest = toolchain_env.ensure(tc, toolchains.env_path(config, tc))
    except toolchain_env.ToolchainInstallError as e:
        first = str(e).splitlines()[0]
        raise AdviceError(f"--target {target}: its compiler could not be installed: {first}") from None
    return dict(toolchain=tc.name, static_profile=tc.static_profile, python=manifest["python"],
                env=dict(tc.environment), versions=manifest["versions"])


def main(argv=None) -> int:
    args = arguments(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(name)s: %(message)s")
    try:
        targets = args.targets or ["v5e"]
        for target in targets:
            if target not in TARGETS:
                raise AdviceError(f"--target {target!r}: expected one of {', '.join(TARGETS)}")
        asked = request.checked(args.shapes, args.dtype, targets, args.kernel)
        from tpu_matmul_repro.experiments.plan.config import ConfigError, checked, load_yaml

        try:
            config = checked(load_yaml(args.config))
        except ConfigError as e:
            raise AdviceError(f"--config {args.config}: {str(e).splitlines()[0]}") from None
        compilers = {target: compiler_for(target, config) for target in asked.targets}
    except AdviceError as e:
        print(f"advise: {e}", file=sys.stderr)
        return 2
    parts, texts = advice(asked, config, compilers, args.results)
    if args.csv:
        pd.concat(parts, ignore_index=True).to_csv(sys.stdout, index=False)
    elif args.json:
        print(table.as_json(pd.concat(parts, ignore_index=True)))
    else:
        print("\n\n".join(texts))
    return 0


def advice(asked: request.Request, config: dict, compilers: dict, results: Path):
    """The ranked table (one frame per target and shape) and its text, for a checked request."""
    from tpu_matmul_repro.experiments.core.provenance import provenance

    versions = {k: v for k, v in provenance().items() if k.endswith("_version")}
    fitted = advisor_model.load(config, results, versions)
    section = config["compile_study"]
    settings = dict(timeout_s=section["timeout_s"], profile_max_steps=section["profile_max_steps"])
    parts, texts = [], []
    for target in asked.targets:
        for shape in asked.shapes:
            rows, xla = search.search(shape, asked.dtype, target, asked.kernel, fitted, compilers[target],
                                      settings)
            ranked = table.ranked(rows, xla, fitted, target)
            parts.append(ranked)
            texts.append(table.text(ranked, header(ranked, shape, asked, target, fitted)))
    return parts, texts


def header(ranked: pd.DataFrame, shape, asked, target: str, fitted) -> list[str]:
    from tpu_matmul_repro.experiments.core.chips import chip

    pallas = ranked[ranked.kernel != "xla"]
    counts = pallas.status.value_counts().to_dict()
    libtpu = ", ".join(sorted(set(ranked.libtpu_version.dropna().astype(str)))) or "?"
    m, k, n = shape
    return [f"{m}x{k}x{n} {asked.dtype} on {target} ({chip(target).device_kind}), kernel {asked.kernel}: "
            f"{len(pallas)} candidate blocks; " + ", ".join(f"{v} {s}" for s, v in sorted(counts.items())),
            f"Estimates, not measurements: libtpu {libtpu}'s deviceless compile for {target} through the "
            f"timing model ({fitted.source}).",
            f"Intervals: {fitted.band.describe(target, 'published v5e')}."]
