"""The history's compiles: one release's environment (a configured toolchain's where it has the same
pins) and the VMEM of the post's configurations there, through the compile study's job code and cache.
"""
import dataclasses
import logging
import time

import pandas as pd

from tpu_matmul_repro.experiments.compile_study import toolchain_env
from tpu_matmul_repro.experiments.compile_study.study import run_job, toolchain_error_rows
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.experiments.core.jobs import Job
from tpu_matmul_repro.experiments.core.provenance import provenance
from tpu_matmul_repro.experiments.plan import toolchains as toolchain_plan
from tpu_matmul_repro.studies.history.bisect import Answer
from tpu_matmul_repro.studies.history.releases import Release

log = logging.getLogger(__name__)

# libtpu releases of 2024-2025 ask the cloud metadata server for minutes before the first compile.
RELEASE_ENVIRONMENT = (("TPU_SKIP_MDS_QUERY", "1"),)
VERSION_PACKAGES = ("jax", "jaxlib", "libtpu")


@dataclasses.dataclass(frozen=True)
class Settings:
    """What the history compiles, for which chip, and how (from the config: experiments.plan)."""

    target: str  # the post's chip
    sizes: tuple  # the post's configurations at these sizes (the compile study's)
    timeout_s: float  # per compile


def settings_of(config: dict) -> Settings:
    study = config["compile_study"]
    return Settings(target=POST_CHIP, sizes=tuple(study["sizes"]),
                    timeout_s=study["timeout_s"])


def pinned(toolchain: toolchain_plan.Toolchain) -> dict[str, str]:
    return {p: v for p, v in toolchain.pins if p in VERSION_PACKAGES}


def release_toolchain(release: Release, toolchains: dict) -> toolchain_plan.Toolchain:
    """The toolchain that compiles `release`: a configured one with exactly its jax, jaxlib and libtpu
    (its environment exists already), else one of its own pinning those three."""
    wanted = release.pins()
    own = {p: provenance()[f"{p}_version"] for p in VERSION_PACKAGES}
    for toolchain in toolchains.values():
        if (own if toolchain.pipeline else pinned(toolchain)) == wanted:
            return toolchain
    return toolchain_plan.Toolchain(name=release.name, pins=tuple(sorted(wanted.items())),
                                    environment=RELEASE_ENVIRONMENT)


class ReleaseCompiler:
    """Compiles configurations in each release's environment, building an environment the first time a
    release is asked for; remembers every answer (and every release that could not be installed)."""

    def __init__(self, releases: list[Release], config: dict, settings: Settings, stderr=None):
        self.releases, self.config, self.settings, self.stderr = releases, config, settings, stderr
        self.toolchains = toolchain_plan.parse(config)
        self.rows: dict[tuple[int, Case], dict] = {}
        self.experiment: dict[Case, str] = {}
        self.install_s: dict[int, float] = {}  # seconds spent making each environment (0: it existed)

    def environment(self, index: int) -> dict:
        """run_job's python/env/versions for release `index`; raises ToolchainInstallError."""
        release = self.releases[index]
        if not release.installable:
            raise toolchain_env.ToolchainInstallError(f"{release.name} not installable: {release.note}")
        toolchain = release_toolchain(release, self.toolchains)
        if toolchain.pipeline:
            return dict(python=None, env=None, versions=None, toolchain=toolchain.name)
        path = toolchain_plan.env_path(self.config, toolchain)
        start = time.monotonic()
        manifest = toolchain_env.ensure(toolchain, path, log=log)
        self.install_s[index] = round(time.monotonic() - start, 1)
        log.info("%s: environment %s (%s, %.0f s)", release.name, manifest["path"], manifest["versions"],
                 self.install_s[index])
        return dict(python=manifest["python"], env=dict(toolchain.environment), versions=manifest["versions"],
                    toolchain=toolchain.name)

    def compile(self, index: int, cases: list[tuple[str, Case]]) -> list[dict]:
        """Rows of `cases` ((experiment, case) pairs) compiled by release `index`, each compiled once."""
        todo = [(e, c) for e, c in cases if (index, c) not in self.rows]
        for experiment, case in todo:
            self.experiment[case] = experiment
        by_experiment: dict[str, list[Case]] = {}
        for experiment, case in todo:
            by_experiment.setdefault(experiment, []).append(case)
        if by_experiment:
            self._compile(index, by_experiment)
        return [self.rows[(index, c)] for _, c in cases]

    def _compile(self, index: int, by_experiment: dict[str, list[Case]]) -> None:
        release = self.releases[index]
        jobs = [Job(target=self.settings.target, experiment=experiment, cases=tuple(cases),
                    timeout_s=self.settings.timeout_s, profile_max_steps=0,
                    toolchain=release.name, static_profile=False)
                for experiment, cases in by_experiment.items()]
        try:
            where = self.environment(index)
        except toolchain_env.ToolchainInstallError as e:
            log.warning("%s: %s", release.name, e)
            frames = [toolchain_error_rows(job, str(e), release.pins()) for job in jobs]
        else:
            frames = [run_job(job, stderr=self.stderr, python=where["python"], env=where["env"],
                              versions=where["versions"]) for job in jobs]
        for row in pd.concat(frames, ignore_index=True).to_dict("records"):
            case = Case(row["kernel"], row["dtype"], int(row["m"]), int(row["k"]), int(row["n"]),
                        *(None if pd.isna(row[b]) else int(row[b]) for b in ("bm", "bk", "bn")))
            self.rows[(index, case)] = row

    def answer(self, index: int, case: Case) -> Answer:
        row = self.compile(index, [(self.experiment.get(case, ""), case)])[0]
        vmem = row.get("vmem_bytes")
        return Answer(status=row["status"], vmem_bytes=None if pd.isna(vmem) else int(vmem),
                      error=str(row.get("error") or ""))
