"""The TPU compile study: compile each configuration for a target and turn what the compiler reports
into one tidy row per (configuration, scoped-VMEM limit).

Per row:
- status: ok, vmem_oom, compile_error or timeout;
- vmem_bytes: VMEM used (ok) or requested (vmem_oom); vmem_limit_bytes: the scoped-VMEM limit
  applied (the chip's default unless raised); oom_limit_bytes: the limit the compiler said was
  exceeded (the scoped limit, or the core's physical VMEM when even that is too small);
- est_cycles: libtpu's estimate (Pallas: its static profile, measured on the full grid or
  extrapolated from small grids, see cycles_method; XLA: its cost model's cycles);
- compute_seconds = est_cycles / clock; hbm_seconds = HBM bytes the grid really moves / bandwidth;
- seconds = max(compute_seconds, hbm_seconds), the best estimate: the static profile does not wait
  for DMAs, and no kernel can move its bytes faster than HBM allows;
- tflops = FLOPs / seconds; roofline_tflops = FLOPs / max(FLOPs / peak, hbm_seconds).
All of it is an estimate for the target, never a measurement.
"""
import dataclasses
import logging

import pandas as pd

from experiments.compile_study import extrapolate
from experiments.core.cases import Case
from experiments.core.chips import Chip, MiB, chip
from experiments.core.provenance import provenance
from experiments.core.runtime import Progress
from experiments.compile_study.tpu_compile import Compiler
from experiments.core.schema import frame
from experiments.core.traffic import flops, hbm_bytes, min_vmem_bytes

log = logging.getLogger(__name__)

# cycles_method of an ok Pallas row whose toolchain cannot profile (libtpu 0.0.5 rejects the flag)
NO_STATIC_PROFILE = "no_static_profile"



@dataclasses.dataclass(frozen=True)
class Job:
    """One Snakemake job: cases of one experiment and dtype for one target."""

    target: str
    experiment: str
    cases: tuple  # Case, compiled at the default limit
    raise_limits_for: tuple = ()  # the experiment's own cases (the rest come from its block search);
    # compiled again at raised limits if they run out of VMEM
    raised_limits_mib: tuple = ()
    timeout_s: float = 300
    profile_max_steps: int = 16
    toolchain: str = "current"  # experiments/plan/toolchains.py; rows carry it
    static_profile: bool = True  # False: the toolchain's libtpu has no static profile (no Pallas cycles)


class CycleEstimator:
    """Estimated cycles of ok Pallas cases: profiled directly when the grid is small, else fitted."""

    def __init__(self, profiler: Compiler, max_steps: int):
        self.profiler, self.max_steps = profiler, max_steps
        # case -> cycles, shared by the fits of all sizes with the same blocks. A case is profiled
        # once, at the first limit it is asked for: a raised VMEM limit changes whether a kernel
        # fits, not the code it compiles to (seen: identical cycles at 32, 64 and 96 MiB).
        self._cycles = {}

    def _profile(self, case: Case, limit: int | None):
        if self._cycles.get(case) is None:
            result = self.profiler.compile(case, limit)
            if result["status"] != "ok":
                log.warning("profile of %s failed: %s %s", case.label(), result["status"], result["error"][:200])
            self._cycles[case] = result["est_cycles"]
        return self._cycles[case]

    def cycles(self, case: Case, limit: int | None) -> tuple[int | None, str]:
        if extrapolate.grid_counts(case)[1] <= self.max_steps:
            return self._profile(case, limit), "profiled"
        points = [(c, self._profile(c, limit)) for c in extrapolate.reduced_cases(case)]
        if any(cycles is None for _, cycles in points):
            return None, "extrapolation_failed"
        return extrapolate.predict(extrapolate.fit(points), case), "extrapolated"


def chip_columns(c: Chip, case: Case) -> dict:
    """The chip's figures and the case's HBM traffic and roofline: they travel with each row (estimated
    or measured), so figures and reports read only the table."""
    moved, work = hbm_bytes(case), flops(case)
    hbm_seconds = moved / c.hbm_bytes_per_s
    return dict(peak_tflops=c.peak_flops[case.dtype] / 1e12, hbm_bytes_per_s=c.hbm_bytes_per_s,
                hbm_bytes=moved, hbm_seconds=hbm_seconds,
                roofline_tflops=work / max(work / c.peak_flops[case.dtype], hbm_seconds) / 1e12)


def estimate_row(job: Job, case: Case, result: dict, limit: int | None, cycles: int | None,
                 method: str) -> dict:
    c = chip(job.target)
    row = dict(
        source="estimate", toolchain=job.toolchain, target=job.target, device_kind=c.device_kind, experiment=job.experiment,
        kernel=case.kernel, dtype=case.dtype, m=case.m, k=case.k, n=case.n,
        bm=case.bm, bk=case.bk, bn=case.bn, status=result["status"], vmem_bytes=result["vmem_bytes"],
        vmem_limit_bytes=limit or c.default_vmem_limit_bytes, oom_limit_bytes=result["oom_limit_bytes"],
        raised_limit=limit is not None, est_cycles=cycles, cycles_method=method if cycles or method == NO_STATIC_PROFILE else "",
        compile_s=result["compile_s"], error=result["error"],
        search=case.kernel != "xla" and case not in job.raise_limits_for,
        **chip_columns(c, case),
    )
    if result["status"] == "ok" and cycles:
        row["compute_seconds"] = cycles / c.clock_hz
        row["seconds"] = max(row["compute_seconds"], row["hbm_seconds"])
        row["tflops"] = flops(case) / row["seconds"] / 1e12
    return row


def run_job(job: Job, *, stderr=None, python: str | None = None, env: dict | None = None,
            versions: dict | None = None) -> pd.DataFrame:
    """Compile every case of `job` (and raised-limit retries) and return its tidy rows.

    `python` and `env`: the toolchain's environment for the compile workers (default: this process's),
    `versions` its jax, jaxlib and libtpu versions for the rows (default: this process's).
    """
    rows = []
    workers = dict(timeout_s=job.timeout_s, stderr=stderr, python=python, env=env,
                   toolchain=job.toolchain if python else "")
    with Compiler(job.target, **workers) as compiler, Compiler(job.target, profile=True, **workers) as profiler:
        estimator = CycleEstimator(profiler, job.profile_max_steps)

        def one(case: Case, limit: int | None) -> dict:
            result = beyond_physical_vmem(job.target, case) or compiler.compile(case, limit)
            cycles, method = None, ""
            if result["status"] == "ok":
                if case.kernel == "xla":
                    cycles, method = result["est_cycles"], "xla_cost_model"
                elif job.static_profile:
                    cycles, method = estimator.cycles(case, limit)
                else:
                    method = NO_STATIC_PROFILE
            log.info("%s %s limit=%s: %s vmem=%s cycles=%s (%s) %.1fs", job.target, case.label(), limit,
                     result["status"], result["vmem_bytes"], cycles, method, result["compile_s"])
            return estimate_row(job, case, result, limit, cycles, method)

        progress = Progress(len(job.cases), log)
        for case in job.cases:
            row = one(case, None)
            rows.append(row)
            if row["status"] == "vmem_oom" and case in job.raise_limits_for:
                for mib in raised_limits(job.target, job.raised_limits_mib, row["vmem_bytes"]):
                    rows.append(one(case, mib * MiB))
            progress.step(f"{case.label()}: {row['status']}")
    return frame(rows, job_versions(versions))


def job_versions(versions: dict | None) -> dict:
    """The row's version columns: the toolchain's jax, jaxlib and libtpu, and this checkout's commit."""
    if versions is None:
        return provenance()
    return {**provenance(), **{f"{p}_version": versions.get(p, "not installed") for p in ("jax", "jaxlib", "libtpu")}}


def toolchain_error_rows(job: Job, error: str, versions: dict | None = None) -> pd.DataFrame:
    """One toolchain_error row per case of `job`: its toolchain could not be installed or started, so
    nothing was compiled; `error` names the toolchain and says why."""
    c = chip(job.target)
    rows = [dict(source="estimate", toolchain=job.toolchain, target=job.target, device_kind=c.device_kind,
                 experiment=job.experiment, kernel=case.kernel, dtype=case.dtype, m=case.m, k=case.k, n=case.n,
                 bm=case.bm, bk=case.bk, bn=case.bn, status="toolchain_error",
                 vmem_limit_bytes=c.default_vmem_limit_bytes, raised_limit=False,
                 search=case.kernel != "xla" and case not in job.raise_limits_for, error=error[:1000])
            for case in job.cases]
    return frame(rows, job_versions(versions or {}))


def beyond_physical_vmem(target: str, case: Case) -> dict | None:
    """A vmem_oom result, without compiling, for a kernel whose blocks alone exceed the core's VMEM.

    No limit can make such a kernel fit, and libtpu takes minutes to say so (v1 at 8192: > 2 min).
    The row's error says it was not compiled; vmem_bytes is then the lower bound, not the compiler's.
    """
    if case.kernel == "xla":
        return None
    need, have = min_vmem_bytes(case), chip(target).vmem_bytes
    if need <= have:
        return None
    return dict(status="vmem_oom", vmem_bytes=need, oom_limit_bytes=have, est_cycles=None, compile_s=0.0,
                error=f"not compiled: its VMEM blocks alone need {need / MiB:.2f} MiB, more than the core's "
                      f"{have / MiB:.0f} MiB of VMEM (a lower bound from the block shapes)")


def raised_limits(target: str, limits_mib, requested_bytes: int) -> list[int]:
    """The raised limits (MiB) worth compiling: at least what the compiler said the kernel requests,
    and within the chip's physical VMEM. Lower limits would fail for the reason already recorded."""
    c = chip(target)
    return [mib for mib in limits_mib if requested_bytes <= mib * MiB <= c.vmem_bytes]


