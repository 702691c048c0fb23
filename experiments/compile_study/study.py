"""The TPU compile study: compile each configuration for a target and turn what the compiler reports
into one tidy row per (configuration, scoped-VMEM limit); the columns: docs/outputs.md. All estimates.
"""
import dataclasses
import logging
import math

import pandas as pd

from tpu_matmul_repro.experiments.compile_study import cache
from tpu_matmul_repro.experiments.compile_study.tpu_compile import Compiler
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.chips import MiB, chip
from tpu_matmul_repro.experiments.core.compiler_output import readable_error
from tpu_matmul_repro.experiments.core.jobs import (
    Job,
    beyond_physical_vmem,
    chip_columns,
    raised_limits,
    searched,
)
from tpu_matmul_repro.experiments.core.provenance import provenance
from tpu_matmul_repro.experiments.core.runtime import Progress
from tpu_matmul_repro.experiments.core.schema import frame
from tpu_matmul_repro.experiments.core.units import flops, tflops
from tpu_matmul_repro.kernels.spec import BLOCKS

log = logging.getLogger(__name__)

# cycles_method of an ok Pallas row not profiled: its toolchain cannot (libtpu 0.0.5) or its job does
# not ask to; or its grid has more than profile_max_steps steps, each of which the profile would walk
NO_STATIC_PROFILE = "no_static_profile"
OVER_PROFILE_MAX_STEPS = "over_profile_max_steps"
# vmem_method of rows not compiled: a raised limit above one the kernel fits in (fits_higher_limit), a
# searched configuration dominated by one out of VMEM (dominated_result)
FITS_LOWER_LIMIT = "fits_lower_limit"
DOMINATED = "dominated"


def case_columns(job: Job, case: Case) -> dict:
    """The columns every estimate row of `case` in `job` has, whatever its outcome."""
    c = chip(job.target)
    return dict(source="estimate", toolchain=job.toolchain, target=job.target, device_kind=c.device_kind,
                experiment=job.experiment, kernel=case.kernel, dtype=case.dtype, m=case.m, k=case.k, n=case.n,
                bm=case.bm, bk=case.bk, bn=case.bn, search=searched(case, job))


def estimate_row(job: Job, case: Case, result: dict, limit: int | None, cycles: int | None,
                 method: str, vmem_method: str) -> dict:
    c = chip(job.target)
    row = dict(
        case_columns(job, case), status=result["status"], vmem_bytes=result["vmem_bytes"],
        vmem_limit_bytes=limit or c.default_vmem_limit_bytes, oom_limit_bytes=result["oom_limit_bytes"],
        raised_limit=limit is not None, est_cycles=cycles, vmem_method=vmem_method,
        cycles_method=method if result["status"] == "ok" else "",
        compile_s=result["compile_s"], error=result["error"],
        **chip_columns(c, case),
    )
    if result["status"] == "ok" and cycles:
        row["compute_seconds"] = cycles / c.clock_hz
        row["seconds"] = max(row["compute_seconds"], row["hbm_seconds"])
        row["tflops"] = tflops(flops(case.m, case.k, case.n), row["seconds"])
    return row


def run_job(job: Job, *, stderr=None, python: str | None = None, env: dict | None = None,
            versions: dict | None = None) -> pd.DataFrame:
    """Compile the cases of `job` (and raised-limit retries) and return its tidy rows. `python`, `env`:
    the toolchain's environment for the workers, `versions` its versions for the rows (default: ours)."""
    return run_jobs([job], stderr=stderr, python=python, env=env, versions=versions)


def run_jobs(jobs, *, stderr=None, python: str | None = None, env: dict | None = None,
             versions: dict | None = None) -> pd.DataFrame:
    """run_job for several jobs of one target and toolchain with the same two compile workers (starting
    one takes longer than all compiles of a small job): their rows, in the jobs' order."""
    jobs = list(jobs)
    shared = {(job.target, job.toolchain, job.timeout_s) for job in jobs}
    if len(shared) != 1:
        raise ValueError(f"jobs of one target, toolchain and timeout_s only, got {sorted(shared)}")
    target, toolchain, timeout_s = shared.pop()
    workers = dict(timeout_s=timeout_s, stderr=stderr, python=python, env=env,
                   toolchain=toolchain if python else "")
    row_versions = job_versions(versions)
    with Compiler(target, cache=cache.for_target(target, False, row_versions), **workers) as compiler, \
            Compiler(target, profile=True, cache=cache.for_target(target, True, row_versions),
                     **workers) as profiler:
        progress = Progress(sum(len(job.cases) for job in jobs), log)  # one count for the whole batch
        rows = [row for job in jobs
                for row in job_rows(job, compiler, profiler, progress)]
        for name, worker in (("plain", compiler), ("profiled", profiler)):
            if worker.cache:
                log.info("compile cache (%s compiles): %s", name, worker.cache.summary())
    return frame(rows, row_versions)


def job_rows(job: Job, compiler: Compiler, profiler: Compiler, progress: Progress) -> list[dict]:
    """The rows of one job, compiled with the given plain and profiling workers (run_jobs)."""
    crashed = []  # the first crash of the profiler in this job, if any

    def one(case: Case, limit: int | None) -> dict:
        bound = beyond_physical_vmem(job.target, case)
        if bound:
            result, cycles, method, vmem_method = bound, None, "", "block_bound"
        elif job.static_profile and case.facts.pallas and profiled_whole(case):
            result, cycles, method, vmem_method = profiled(case, limit)
        else:  # the model's inputs: a plain compile gives them all
            probe = two_step_grid(case) if job.two_step_vmem and case.facts.grid == BLOCKS else case
            result = _located(compiler.compile(probe, limit), probe, case)
            vmem_method = "compiled" if probe == case else "representative"
            ok = result["status"] == "ok"
            cycles = result["est_cycles"] if ok and not case.facts.pallas else None
            method = ("" if not ok else "xla_cost_model" if not case.facts.pallas
                      else OVER_PROFILE_MAX_STEPS if job.static_profile else NO_STATIC_PROFILE)
        log.info("%s %s limit=%s: %s vmem=%s (%s) cycles=%s (%s) %.1fs", job.target, case.label(), limit,
                 result["status"], result["vmem_bytes"], vmem_method, cycles, method, result["compile_s"])
        return estimate_row(job, case, result, limit, cycles, method, vmem_method)

    def profiled_whole(case: Case) -> bool:
        return grid_steps(case) <= job.profile_max_steps

    def profiled(case: Case, limit: int | None):
        """VMEM verdict and cycles from one profiled compile of the whole grid."""
        # libtpu's static profiler crashes on every kernel for some targets (v4), each crash costing a
        # worker restart: after the first, the job stops trying.
        result = crashed[0] if crashed else profiler.compile(case, limit)
        if result["status"] == "compile_error" and "exited with code" in result["error"]:
            # the VMEM verdict from a plain compile, and the crash as the reason there are no cycles
            if not crashed:
                crashed.append(dict(result, error=f"{result['error']}; on {case.label()}, after which "
                                                  "this job did not run the profiler again"))
            crash = result["error"]
            result = compiler.compile(case, limit)
            if result["status"] == "ok":
                result = dict(result,
                              error=f"no cycle estimate: libtpu's static profiler crashed ({crash})")
                return result, None, "profiler_crashed", "compiled"
        if result["status"] != "ok":
            return result, None, "", "compiled"
        cycles = result["est_cycles"]
        return result, cycles, "profiled" if cycles is not None else NO_STATIC_PROFILE, "compiled"

    rows_of = {}  # case -> its rows (default limit, then raised limits), emitted in the job's order
    out_of_vmem = []  # (case, row): compiled at the default limit, out of VMEM (dominated_result)
    # Smaller blocks first, so that a searched configuration dominated by one already out of VMEM is
    # not compiled. Cases with the same blocks keep their order.
    for case in sorted(job.cases, key=block_elements):
        # blocks beyond the core's VMEM keep their block_bound row (and its lower bound) instead
        skippable = (job.skip_dominated and searched(case, job)
                     and not beyond_physical_vmem(job.target, case))
        dominated = dominated_result(case, out_of_vmem) if skippable else None
        if dominated:
            row = estimate_row(job, case, dominated, None, None, "", DOMINATED)
            log.info("%s %s limit=None: vmem_oom (%s, not compiled)", job.target, case.label(), DOMINATED)
        else:
            row = one(case, job.limit_mib * MiB if job.limit_mib else None)
            if row["status"] == "vmem_oom" and row["vmem_method"] in ("compiled", "representative"):
                out_of_vmem.append((case, row))
        rows_of[case] = [row]
        if row["status"] == "vmem_oom" and case in job.raise_limits_for:
            fits = None  # the row of the lowest raised limit the kernel fits in
            for mib in raised_limits(job.target, job.raised_limits_mib, row["vmem_bytes"]):
                rows_of[case].append(fits_higher_limit(fits, mib * MiB) if fits else one(case, mib * MiB))
                fits = fits or (rows_of[case][-1] if rows_of[case][-1]["status"] == "ok" else None)
        progress.step(f"{case.label()}: {row['status']}")
    rows = [row for case in job.cases for row in rows_of[case]]
    skipped = sum(row["vmem_method"] == DOMINATED for row in rows)
    if skipped:
        log.info("%d searched configurations out of VMEM as smaller blocks were: not compiled", skipped)
    return rows


def fits_higher_limit(fits: dict, limit: int) -> dict:
    """The row of a kernel at a raised limit above one it already fits in, without compiling it again:
    the limit decides whether it fits, not its code (tests/test_compile_study.py checks this)."""
    return dict(fits, vmem_limit_bytes=limit, compile_s=0.0, vmem_method=FITS_LOWER_LIMIT)


def job_versions(versions: dict | None) -> dict:
    """The row's version columns: the toolchain's jax, jaxlib and libtpu, and this checkout's commit."""
    if versions is None:
        return provenance()
    return {**provenance(),
            **{f"{p}_version": versions.get(p, "not installed") for p in ("jax", "jaxlib", "libtpu")}}


def toolchain_error_rows(job: Job, error: str, versions: dict | None = None) -> pd.DataFrame:
    """One toolchain_error row per case of `job`: its toolchain could not be installed or started, so
    nothing was compiled; `error` names the toolchain and says why."""
    limit = chip(job.target).default_vmem_limit_bytes
    rows = [dict(case_columns(job, case), status="toolchain_error", vmem_limit_bytes=limit,
                 raised_limit=False, error=readable_error(error)) for case in job.cases]
    return frame(rows, job_versions(versions or {}))


def _located(result: dict, probe: Case, case: Case) -> dict:
    """A failed compile of a representative small grid, its error saying where it was compiled."""
    if probe == case or result["status"] == "ok":
        return result
    return dict(result, error=f"compiled at {probe.m}x{probe.k}x{probe.n} with the same blocks and "
                              f"single-step axes: {result['error']}")


# (target, libtpu) whose plain compiles of a block grid ask the same VMEM at every extent with the same
# blocks and single-step axes: in data/small_grid_vmem_check.csv (benchmarks/small_grid_vmem.py) every
# checked block, compiled both ways, gave the same verdict and bytes. Not 7x: XLA prefetches an
# operand that fits into VMEM beside the blocks, which a small grid's operands do and the full size's
# may not (4 of its 36 differ).
TWO_STEP_VMEM = frozenset({("v5e", "0.0.50.1"), ("v6e", "0.0.50.1"), ("v5p", "0.0.50.1")})


def two_step_grid(case: Case) -> Case:
    """The case's blocks on a grid of two steps along each axis where it has several, one where it has
    one: its VMEM verdict is the case's (TWO_STEP_VMEM), and shapes that share blocks share it."""
    m, k, n = (b * min(2, d // b) for d, b in ((case.m, case.bm), (case.k, case.bk), (case.n, case.bn)))
    return dataclasses.replace(case, m=m, k=k, n=n)


def grid_steps(case: Case) -> int:
    """The steps of a case's grid (1 without one): what a static profile walks, each in turn."""
    return math.prod(case.grid())


def block_elements(case: Case) -> int:
    """The elements of a case's blocks (0 without): no case comes after one at least as large."""
    return (case.bm * case.bk * case.bn) if case.facts.grid == BLOCKS else 0


def single_step_axes(case: Case) -> tuple[bool, ...]:
    return tuple(steps == 1 for steps in case.grid())


def dominated_result(case: Case, out_of_vmem) -> dict | None:
    """A vmem_oom result, without compiling, for a searched blocked kernel whose bm and bn are at least
    those of an `out_of_vmem` case (default limit) with the same bk, problem and single-step axes: VMEM
    grows with each block dimension, whatever the grid's extent (tests/test_compile_study.py checks it)."""
    if case.facts.grid != BLOCKS:
        return None
    for other, row in out_of_vmem:
        problem = (other.kernel, other.dtype, other.m, other.k, other.n)
        if (problem == (case.kernel, case.dtype, case.m, case.k, case.n)
                and single_step_axes(other) == single_step_axes(case)
                and other.bk == case.bk and other.bm <= case.bm and other.bn <= case.bn):
            need = "" if row["vmem_bytes"] is None else f", asking for {row['vmem_bytes'] / MiB:.2f} MiB"
            return dict(status="vmem_oom", vmem_bytes=None, oom_limit_bytes=row["oom_limit_bytes"],
                        est_cycles=None, compile_s=0.0,
                        error=f"not compiled: its blocks are at least as large along every axis as "
                              f"({other.bm},{other.bk},{other.bn}), which ran out of VMEM at this limit"
                              f"{need}, with single steps along the same axes")
    return None
