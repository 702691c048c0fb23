"""Measuring kernels on a real device: compile, check, warm up, then time.

Per configuration:
1. compile (`jit(...).lower(...).compile()`); a compiler error is a row (vmem_oom, compile_error);
2. run once and compare with `jnp.matmul` in float32 at HIGHEST precision (int8: exact int32); a wrong
   result is recorded as `wrong_result` with its error and is not timed; an exception is `runtime_error`;
3. warm up, then time, rotating among `input_sets` sets of fresh random normal operands:
   - `samples_s`: device time per call, from batches of back-to-back asynchronous calls, each batch
     timed as a whole until its last result is ready (dispatch overlaps device work, so this
     approaches device time; a batch lasts at least `min_sample_s`);
   - `wall_samples_s`: single calls, each blocked on (`block_until_ready`), as the post timed them
     with `timeit`: dispatch included, an upper bound.
Raw samples are kept; medians and quartiles are derived downstream (`experiments/measure/statistics.py`).

Nothing here is TPU-specific except the device the jitted call runs on, so the CPU tests run every
branch (on XLA's matmul: Pallas kernels run on the CPU only in interpret mode, whose timings mean
nothing).
"""
import dataclasses
import datetime
import logging
import math
import time

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from experiments.compile_study import compiler_output
from experiments.core.cases import Case, wrapper
from experiments.core.chips import CHIPS, MiB
from experiments.measure.device import Device
from experiments.core.inputs import INT8_SCALE
from experiments.core.provenance import provenance
from experiments.core.runtime import Progress
from experiments.compile_study.study import chip_columns, raised_limits
from experiments.core.schema import frame
from experiments.core.traffic import hbm_bytes

log = logging.getLogger(__name__)


TIMER = "batched_async_calls"


@dataclasses.dataclass(frozen=True)
class Settings:
    warmup: int = 3
    samples: int = 10
    input_sets: int = 3
    min_sample_s: float = 0.02
    max_calls: int = 100
    max_batch_bytes: int = 2 * 1024 * MiB  # outputs alive at once in a batch
    tolerance: tuple = (("float32", 2e-2), ("bfloat16", 2e-2), ("int8", 0.0))


@dataclasses.dataclass(frozen=True)
class MeasureJob:
    """One Snakemake job: the cases of one experiment and dtype, measured on this run's device."""

    device: Device
    label: str
    experiment: str
    cases: tuple
    raise_limits_for: tuple = ()
    raised_limits_mib: tuple = ()
    settings: Settings = Settings()


def operands(case: Case, seed: int) -> tuple[jax.Array, jax.Array]:
    """Fresh random normal A and B on the default device (int8: scaled and clipped, as in tests)."""
    ka, kb = jax.random.split(jax.random.key(seed))
    if case.dtype == "int8":
        a = jnp.clip(jnp.rint(jax.random.normal(ka, (case.m, case.k)) * INT8_SCALE), -127, 127)
        b = jnp.clip(jnp.rint(jax.random.normal(kb, (case.k, case.n)) * INT8_SCALE), -127, 127)
        return a.astype(jnp.int8), b.astype(jnp.int8)
    return (jax.random.normal(ka, (case.m, case.k), case.dtype),
            jax.random.normal(kb, (case.k, case.n), case.dtype))


def relative_error(out: jax.Array, a: jax.Array, b: jax.Array) -> float:
    """Relative Frobenius error of `out` against jnp.matmul in float32 (int8 operands: int32, exact)."""
    if jnp.issubdtype(a.dtype, jnp.integer):
        ref = jnp.matmul(a.astype(jnp.int32), b.astype(jnp.int32))
    else:
        ref = jnp.matmul(a.astype(jnp.float32), b.astype(jnp.float32), precision=jax.lax.Precision.HIGHEST)
    got, want = np.asarray(out, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if got.shape != want.shape:
        return math.inf
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), np.finfo(np.float64).tiny))


def build(case: Case, vmem_limit_bytes: int | None = None):
    """The jitted call to measure (compiled for, and run on, JAX's default device)."""
    fn, kwargs = wrapper(case.kernel), case.kwargs()
    if case.kernel != "xla":
        kwargs["vmem_limit_bytes"] = vmem_limit_bytes
    return jax.jit(lambda a, b: fn(a, b, **kwargs))


def calls_per_batch(single_call_s: float, out_bytes: int, settings: Settings) -> int:
    """Enough back-to-back calls to last min_sample_s, within max_calls and the batch memory budget."""
    wanted = math.ceil(settings.min_sample_s / max(single_call_s, 1e-9))
    return max(1, min(wanted, settings.max_calls, settings.max_batch_bytes // max(out_bytes, 1)))


def time_blocked(call, inputs, n: int, clock) -> list[float]:
    """Seconds of n single calls, each waited for: the post's `timeit` method."""
    samples = []
    for i in range(n):
        a, b = inputs[i % len(inputs)]
        start = clock()
        call(a, b).block_until_ready()
        samples.append(clock() - start)
    return samples


def time_batched(call, inputs, n: int, calls: int, clock) -> list[float]:
    """Seconds per call of n batches of `calls` asynchronous calls, each batch timed as a whole."""
    samples = []
    for s in range(n):
        start = clock()
        outs = [call(*inputs[(s * calls + j) % len(inputs)]) for j in range(calls)]
        jax.block_until_ready(outs)
        samples.append((clock() - start) / calls)
        del outs
    return samples


def measure_case(case: Case, call, settings: Settings, *, clock=time.perf_counter) -> dict:
    """Compile, check and time `call` on `case`; a dict of status, error, rel_error and raw samples."""
    result = dict(status="ok", error="", vmem_bytes=None, oom_limit_bytes=None, rel_error=None,
                  samples_s=None, wall_samples_s=None, calls_per_sample=None, compile_s=None)
    inputs = [operands(case, seed) for seed in range(settings.input_sets)]
    start = clock()
    try:
        compiled = call.lower(*inputs[0]).compile()
    except Exception as e:  # the compiler's verdict is a result
        return result | compiler_output.compile_failure(e)
    result["compile_s"] = clock() - start
    try:
        out = compiled(*inputs[0])
        result["rel_error"] = relative_error(out, *inputs[0])
        out_bytes = out.size * out.dtype.itemsize
        del out
        tolerance = dict(settings.tolerance)[case.dtype]
        if result["rel_error"] > tolerance:
            result["status"] = "wrong_result"
            result["error"] = (f"relative error {result['rel_error']:.3g} against jnp.matmul in float32 "
                               f"exceeds the tolerance {tolerance:g}; not timed")
            return result
        time_blocked(compiled, inputs, settings.warmup, clock)  # warm-up, discarded
        wall = time_blocked(compiled, inputs, settings.samples, clock)
        calls = calls_per_batch(float(np.median(wall)), out_bytes, settings)
        batched = time_batched(compiled, inputs, settings.samples, calls, clock)
    except Exception as e:  # a kernel that fails at run time: a row, and the sweep goes on
        result["status"] = "runtime_error"
        result["error"] = f"{type(e).__name__}: {e}"[:1000]
        return result
    result.update(samples_s=batched, wall_samples_s=wall, calls_per_sample=calls)
    return result


def measured_row(job: MeasureJob, case: Case, result: dict, limit: int | None, device_kind: str) -> dict:
    chip = CHIPS.get(job.device.name)  # None for the CPU, or a TPU generation this project lacks
    row = dict(
        source="measured", target=job.device.name, device_kind=device_kind, experiment=job.experiment,
        kernel=case.kernel, dtype=case.dtype, m=case.m, k=case.k, n=case.n, bm=case.bm, bk=case.bk, bn=case.bn,
        vmem_limit_bytes=limit or (chip.default_vmem_limit_bytes if chip else None),
        raised_limit=limit is not None, search=case.kernel != "xla" and case not in job.raise_limits_for,
        hbm_bytes=hbm_bytes(case), num_chips=job.device.num_chips, run_label=job.label, timer=TIMER,
        **result,
    )
    if chip:
        row.update(chip_columns(chip, case))
    return row


def run_measure_job(job: MeasureJob, *, build=build, clock=time.perf_counter) -> pd.DataFrame:
    """Measure every case of `job` on JAX's default device; raw samples, one row per case and limit."""
    device_kind = jax.devices()[0].device_kind
    timestamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    progress = Progress(len(job.cases), log)
    rows = []
    for case in job.cases:
        limits = [None]
        while limits:
            limit = limits.pop(0)
            result = measure_case(case, build(case, limit), job.settings, clock=clock)
            rows.append(measured_row(job, case, result, limit, device_kind))
            if (limit is None and result["status"] == "vmem_oom" and case in job.raise_limits_for
                    and job.device.name in CHIPS):
                limits = [mib * MiB for mib in raised_limits(job.device.name, job.raised_limits_mib,
                                                             result["vmem_bytes"])]
        progress.step(f"{case.label()}: {result['status']}")
    df = frame(rows, provenance())
    df["timestamp"] = timestamp
    return df

