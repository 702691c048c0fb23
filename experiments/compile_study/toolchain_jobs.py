"""A toolchain's two steps in the pipeline: its environment's marker and its compile jobs. A toolchain
that cannot be installed becomes toolchain_error rows and a loud console line, not a failed run.
"""
import json
import sys
from pathlib import Path

import pandas as pd

from tpu_matmul_repro.experiments.compile_study import toolchain_env
from tpu_matmul_repro.experiments.compile_study.study import run_jobs, toolchain_error_rows
from tpu_matmul_repro.experiments.core.atomic_write import write_text_atomic
from tpu_matmul_repro.experiments.core.jobs import Toolchain


def warn(log, message: str) -> None:
    log.error(message)
    print(f"WARNING: {message}", file=sys.__stderr__, flush=True)  # the console, past the job's log


def environment_marker(toolchain: Toolchain, path, marker, log, *, pip_args=()) -> dict:
    """Build or find the environment; write the marker (status ok with the manifest, or failed)."""
    try:
        manifest = dict(status="ok",
                        **toolchain_env.ensure(toolchain, Path(path), pip_args=pip_args, log=log))
        log.info("toolchain %s: %s, versions %s", toolchain.name, manifest["path"], manifest["versions"])
    except toolchain_env.ToolchainInstallError as e:
        warn(log, f"{e}\nIts results are missing from this run (rows with status toolchain_error); the other "
                  f"toolchains' results are complete. Delete {marker} to try again.")
        manifest = dict(status="failed", toolchain=toolchain.name, pins=dict(toolchain.pins), path=str(path),
                        error=str(e))
    write_text_atomic(json.dumps(manifest, indent=1), marker)
    return manifest


def run_toolchain_jobs(jobs, toolchain: Toolchain, path, marker, log, *, stderr=None) -> pd.DataFrame:
    """Compile `jobs` (of one target) with the toolchain's Python, or return their toolchain_error rows."""
    jobs = list(jobs)
    targets = sorted({job.target for job in jobs})
    if len(targets) != 1:
        raise ValueError(f"jobs of one target only, got targets={targets}")
    manifest = json.loads(Path(marker).read_text())
    if manifest["status"] == "ok":
        try:  # the cache may have been deleted since the marker was written: rebuilt here
            manifest = toolchain_env.ensure(toolchain, Path(path), log=log)
        except toolchain_env.ToolchainInstallError as e:
            manifest = dict(status="failed", error=str(e))
    if manifest.get("status") == "failed":
        warn(log, f"{toolchain.name} {targets[0]}: nothing compiled: {manifest['error']}")
        return pd.concat([toolchain_error_rows(job, manifest["error"], dict(toolchain.pins)) for job in jobs],
                         ignore_index=True)
    return run_jobs(jobs, stderr=stderr, python=manifest["python"], env=dict(toolchain.environment),
                    versions=manifest["versions"])
