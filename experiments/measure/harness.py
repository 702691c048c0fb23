"""Measuring kernels on a real device: compile, check, warm up, then time each configuration in a worker
process killed past its timeout and restarted when it crashes (docs/measuring.md). Raw samples are kept.
"""
import datetime
import logging
import math
import time

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from tpu_matmul_repro.experiments.core import compiler_output
from tpu_matmul_repro.experiments.core.cases import Case, wrapper
from tpu_matmul_repro.experiments.core.chips import CHIPS, MiB
from tpu_matmul_repro.experiments.core.inputs import INT8_SCALE
from tpu_matmul_repro.experiments.core.jobs import (
    MeasureJob,
    Settings,
    beyond_physical_vmem,
    chip_columns,
    raised_limits,
    searched,
)
from tpu_matmul_repro.experiments.core.provenance import provenance
from tpu_matmul_repro.experiments.core.runtime import Progress
from tpu_matmul_repro.experiments.core.schema import frame
from tpu_matmul_repro.experiments.core.traffic import hbm_bytes
from tpu_matmul_repro.experiments.measure import output_check, timers
from tpu_matmul_repro.experiments.measure.process import Worker, WorkerFailed, empty_result
from tpu_matmul_repro.experiments.measure.timers import time_batched, time_blocked  # noqa: F401  (re-exported)

log = logging.getLogger(__name__)

PROFILER = "profiler_device_events"
BATCHED = "batched_async_calls"


def operands(case: Case, seed: int) -> tuple[jax.Array, jax.Array]:
    """Fresh random normal A and B on the default device (int8: scaled and clipped, as in tests)."""
    ka, kb = jax.random.split(jax.random.key(seed))
    if case.dtype == "int8":
        a = jnp.clip(jnp.rint(jax.random.normal(ka, (case.m, case.k)) * INT8_SCALE), -127, 127)
        b = jnp.clip(jnp.rint(jax.random.normal(kb, (case.k, case.n)) * INT8_SCALE), -127, 127)
        return a.astype(jnp.int8), b.astype(jnp.int8)
    return (jax.random.normal(ka, (case.m, case.k), case.dtype),
            jax.random.normal(kb, (case.k, case.n), case.dtype))


def build(case: Case, vmem_limit_bytes: int | None = None):
    """The jitted call to measure (compiled for, and run on, JAX's default device)."""
    fn, kwargs = wrapper(case.kernel), case.kwargs()
    if case.facts.pallas:  # XLA's own matmul takes no VMEM limit of ours
        kwargs["vmem_limit_bytes"] = vmem_limit_bytes
    return jax.jit(lambda a, b: fn(a, b, **kwargs))


def calls_per_batch(single_call_s: float, out_bytes: int, settings: Settings) -> int:
    """Enough back-to-back calls to last min_sample_s, within max_calls and the batch memory budget."""
    wanted = math.ceil(settings.min_sample_s / max(single_call_s, 1e-9))
    return max(1, min(wanted, settings.max_calls, settings.max_batch_bytes // max(out_bytes, 1)))


def measure_case(case: Case, call, settings: Settings, *, clock=time.perf_counter,
                 phase=lambda name: None) -> dict:
    """Compile, check and time `call` on `case`; a dict of status, error, errors and raw samples.
    `phase(name)` is told each phase as it starts: a configuration killed at its timeout says where."""
    result = empty_result()
    inputs = [operands(case, seed) for seed in range(settings.input_sets)]
    phase("compiling")
    start = clock()
    try:
        compiled = call.lower(*inputs[0]).compile()
    except Exception as e:  # the compiler's verdict is a result
        return result | compiler_output.compile_failure(e)
    result["compile_s"] = clock() - start
    try:
        phase("checking")
        out = compiled(*inputs[0])
        verdict = output_check.check(out, *inputs[0], case.dtype, dict(settings.tolerance)[case.dtype])
        result.update(verdict)
        out_bytes = out.size * out.dtype.itemsize
        del out
        if verdict["status"] != "ok":
            return result
        phase("timing")
        time_blocked(compiled, inputs, settings.warmup, clock)  # warm-up, discarded
        wall = time_blocked(compiled, inputs, settings.samples, clock)
        calls = calls_per_batch(float(np.median(wall)), out_bytes, settings)
        batched = time_batched(compiled, inputs, settings.samples, calls, clock)
    except Exception as e:  # a kernel that fails at run time: a row, and the sweep goes on
        result["status"] = "runtime_error"
        result["error"] = compiler_output.readable_error(f"{type(e).__name__}: {e}")
        return result
    result.update(samples_s=batched, wall_samples_s=wall, calls_per_sample=calls, timer=BATCHED)
    if settings.profile:
        try:
            result["device_samples_s"] = timers.time_profiled(compiled, inputs, settings.samples,
                                                              timers.module_name(compiled))
            result["timer"] = PROFILER
        except Exception as e:  # the batched timer stands in, and the row says why
            result["error"] = compiler_output.readable_error(
                f"profiler timing failed ({type(e).__name__}: {e}); seconds from {BATCHED}")
    return result


def measured_row(job: MeasureJob, case: Case, result: dict, limit: int | None,
                 found: dict) -> dict:
    chip = CHIPS.get(job.device.name)  # None for the CPU, or a TPU generation this project lacks
    row = dict(
        source="measured", target=job.device.name, device_kind=found["device_kind"],
        experiment=job.experiment, kernel=case.kernel, dtype=case.dtype, m=case.m, k=case.k, n=case.n,
        bm=case.bm, bk=case.bk, bn=case.bn,
        vmem_limit_bytes=limit or (chip.default_vmem_limit_bytes if chip else None),
        raised_limit=limit is not None, search=searched(case, job),
        hbm_bytes=hbm_bytes(case), num_chips=found["num_chips"], num_devices=found["count"],
        run_label=job.label, dispatch_floor_s=found.get("dispatch_floor_s"),
        **result,
    )
    if chip:
        row.update(chip_columns(chip, case))
    return row


class InProcess:
    """Runs configurations in this process, for tests of the bookkeeping (no isolation: process.Worker)."""

    def __init__(self, build=build, clock=time.perf_counter, found: dict | None = None):
        self.build, self.clock, self.found = build, clock, found  # found: pretend to be that device

    def start(self, settings: Settings) -> dict:
        if self.found:
            return self.found
        d = jax.devices()
        return dict(platform=d[0].platform, device_kind=d[0].device_kind, count=len(d), num_chips=len(d),
                    dispatch_floor_s=timers.dispatch_floor(self.clock))

    def measure(self, case: Case, limit: int | None, settings: Settings) -> dict:
        return measure_case(case, self.build(case, limit), settings, clock=self.clock)

    def close(self):
        pass


def measure_or_row(runner, found: dict, case: Case, limit: int | None, settings: Settings) -> dict:
    """The runner's result, or a runtime_error row when its worker cannot be started."""
    if "failed" in found:
        return empty_result() | dict(status="runtime_error", error=found["failed"][:1000])
    try:
        return runner.measure(case, limit, settings)
    except WorkerFailed as e:
        return empty_result() | dict(status="runtime_error", error=str(e)[:1000])


def run_measure_job(job: MeasureJob, *, runner=None) -> pd.DataFrame:
    """Measure every case of `job`; raw samples, one row per case and limit, failures included."""
    if runner is None:
        runner = Worker(job.device.platform, timeout_s=job.settings.timeout_s)
    timestamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    progress = Progress(len(job.cases), log)
    rows = []
    try:
        try:
            found = runner.start(job.settings)
        except WorkerFailed as e:  # every configuration becomes a row that says why
            log.error("%s", e)
            found = dict(platform=job.device.platform, device_kind=job.device.device_kind, count=None,
                         num_chips=job.device.num_chips, dispatch_floor_s=None, failed=str(e))
        if found["platform"] != job.device.platform:
            raise RuntimeError(f"this job measures on {job.device.platform}, but JAX's default device is "
                               f"{found['platform']} ({found['device_kind']})")
        log.info("device %s (%s): %s devices on %s chips; dispatch floor %s s per call",
                 found["platform"], found["device_kind"], found["count"], found["num_chips"],
                 found["dispatch_floor_s"])
        for case in job.cases:
            limits = [None]
            while limits:
                limit = limits.pop(0)
                skipped = (job.device.name in CHIPS and limit is None
                           and beyond_physical_vmem(job.device.name, case))
                result = (empty_result() | skipped) if skipped else measure_or_row(runner, found, case, limit,
                                                                                   job.settings)
                rows.append(measured_row(job, case, result, limit, found))
                if (limit is None and result["status"] == "vmem_oom" and case in job.raise_limits_for
                        and job.device.name in CHIPS):
                    limits = [mib * MiB for mib in raised_limits(job.device.name, job.raised_limits_mib,
                                                                 result["vmem_bytes"])]
            progress.step(f"{case.label()}: {result['status']}")
    finally:
        runner.close()
    df = frame(rows, provenance())
    df["timestamp"] = timestamp
    return df
