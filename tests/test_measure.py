"""The measurement harness, run on JAX's CPU device with the same code a TPU run uses."""
import dataclasses
import itertools
import json
import time
from pathlib import Path
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from measure_fakes import MARKED_K  # tests/ (a site-packages `tests` shadows the package name)

from tpu_matmul_repro.analysis.aggregate import check_unique, combine, load_measured
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.jobs import MeasureJob
from tpu_matmul_repro.experiments.core.schema import frame as to_frame
from tpu_matmul_repro.experiments.measure import device as device_module
from tpu_matmul_repro.experiments.measure import output_check, timers
from tpu_matmul_repro.experiments.measure.device import (
    Device,
    count_chips,
    detect,
    from_probe,
    target_for_device_kind,
)
from tpu_matmul_repro.experiments.measure.harness import (
    InProcess,
    build,
    calls_per_batch,
    measure_case,
    operands,
    run_measure_job,
    time_batched,
)
from tpu_matmul_repro.experiments.measure.process import Worker, worker_env
from tpu_matmul_repro.experiments.measure.statistics import derive, summarize
from tpu_matmul_repro.experiments.plan.config import with_defaults
from tpu_matmul_repro.experiments.plan.job_lists import measure_settings
from tpu_matmul_repro.experiments.plan.plan import known_targets

# the module's measurement (cpu_rows) made once: every test of this file on one worker
pytestmark = pytest.mark.xdist_group("measure")

CPU = Device("cpu", "cpu", "cpu", 1)
FAST = measure_settings(with_defaults({}), warmup=1, samples=5, input_sets=2, min_sample_s=0.002,
                        max_calls=20)


def test_summary_statistics():
    s = summarize([5.0, 1.0, 4.0, 2.0, 3.0])
    assert s == dict(n_samples=5, seconds=3.0, p25_seconds=2.0, p75_seconds=4.0)
    assert summarize([])["n_samples"] == 0 and np.isnan(summarize(None)["seconds"])


def test_statistics_are_derived_from_raw_samples():
    df = pd.DataFrame(dict(m=[1000, 1000], k=[1000, 1000], n=[1000, 1000],
                           samples_s=[[1e-3, 2e-3, 3e-3, 4e-3, 5e-3], None],
                           wall_samples_s=[[4e-3] * 5, None]))
    out = derive(df)
    assert out.seconds[0] == 3e-3 and out.n_samples[0] == 5 and out.wall_seconds[0] == 4e-3
    assert out.tflops[0] == pytest.approx(2e9 / 3e-3 / 1e12)
    assert out.n_samples[1] == 0 and np.isnan(out.tflops[1])


@pytest.fixture(scope="module")
def cpu_rows():
    cases = tuple(Case("xla", dtype, s, s, s)
                  for dtype in ("float32", "bfloat16", "int8") for s in (128, 256))
    job = MeasureJob(device=CPU, label="test", experiment="xla", cases=cases, settings=FAST)
    return derive(run_measure_job(job))


@pytest.mark.slow
def test_cpu_measurement_of_xla_gives_plausible_rows(cpu_rows):
    assert (cpu_rows.status == "ok").all(), cpu_rows.error.tolist()
    assert (cpu_rows.source == "measured").all() and (cpu_rows.target == "cpu").all()
    assert (cpu_rows.n_samples >= 5).all()
    assert ((cpu_rows.p25_seconds <= cpu_rows.seconds).all()
            and (cpu_rows.seconds <= cpu_rows.p75_seconds).all())
    assert (cpu_rows.tflops > 0).all() and (cpu_rows.wall_seconds > 0).all()
    assert all(len(s) == 5 for s in cpu_rows.samples_s) and all(len(s) == 5 for s in cpu_rows.wall_samples_s)
    assert (cpu_rows[cpu_rows.dtype == "int8"].rel_error == 0).all()
    assert (cpu_rows.rel_error < 1e-2).all()
    for col in ("jax_version", "jaxlib_version", "libtpu_version", "git_sha", "timestamp", "device_kind"):
        assert cpu_rows[col].notna().all() and (cpu_rows[col] != "").all(), col
    assert (cpu_rows.num_chips == 1).all() and (cpu_rows.timer == "profiler_device_events").all()


@pytest.mark.slow
def test_measurement_file_round_trips_and_imports(cpu_rows, tmp_path):
    path = tmp_path / "cpu-test.parquet"
    cpu_rows.drop(columns=["seconds", "tflops"]).to_parquet(path)  # as a job writes it: raw samples
    imported = load_measured([path])
    assert np.allclose(imported.seconds, cpu_rows.seconds)
    table = combine([], None, imported)
    check_unique(table)
    assert len(table) == len(cpu_rows) and (table.experiment == "xla").all()  # kept, not dropped
    copy = tmp_path / "copy.parquet"
    copy.write_bytes(path.read_bytes())
    with pytest.raises(ValueError, match="copy.parquet and .*cpu-test.parquet|cpu-test.parquet and .*copy"):
        load_measured([path, copy])
    (tmp_path / "other.parquet").write_bytes(b"")
    pd.DataFrame({"source": ["estimate"]}).to_parquet(tmp_path / "other.parquet")
    with pytest.raises(ValueError, match="not a measurement file"):
        load_measured([tmp_path / "other.parquet"])


def test_operands_are_random_normal_and_differ_between_sets():
    case = Case("xla", "float32", 256, 256, 256)
    (a0, b0), (a1, _) = operands(case, 0), operands(case, 1)
    assert abs(float(a0.std()) - 1) < 0.05 and abs(float(a0.mean())) < 0.05
    assert not jnp.array_equal(a0, a1) and not jnp.array_equal(a0, b0)
    a8, _ = operands(Case("xla", "int8", 256, 256, 256), 0)
    assert a8.dtype == jnp.int8 and len(np.unique(np.asarray(a8))) > 100


def test_batches_rotate_inputs_and_divide_by_calls():
    seen = []

    def call(a, b):
        seen.append((a, b))
        return jnp.zeros(())

    ticks = itertools.count()
    samples = time_batched(call, [(0, 0), (1, 1), (2, 2)], n=2, calls=4, clock=lambda: float(next(ticks)))
    assert samples == [1 / 4, 1 / 4]  # one clock tick per batch of 4 calls
    assert [a for a, _ in seen] == [0, 1, 2, 0, 1, 2, 0, 1]


def test_calls_per_batch_respects_time_count_and_memory():
    s = measure_settings(with_defaults({}), min_sample_s=0.02, max_calls=100, max_batch_bytes=1000)
    assert calls_per_batch(0.001, 10, s) == 20
    assert calls_per_batch(1e-7, 1, s) == 100
    assert calls_per_batch(0.001, 400, s) == 2  # two outputs fit the budget
    assert calls_per_batch(5.0, 10**6, s) == 1


def test_compile_failure_is_a_row_not_a_crash():
    # A Pallas kernel compiled for the CPU without interpret mode: the compiler refuses it.
    case = Case("v3", "float32", 256, 256, 256, 128, 128, 128)
    result = measure_case(case, build(case), FAST)
    assert result["status"] == "compile_error" and result["samples_s"] is None
    assert "interpret" in result["error"].lower()


def test_vmem_oom_at_compile_time_is_recognised():
    # libtpu's words for v1 at 2048 on v5e (the compile study's tests get them from the real compiler).
    message = ("RESOURCE_EXHAUSTED: E1001: CompileTimeScopedVmemOom: Ran out of memory in memory space vmem "
               "while allocating on stack for %fusion. Scoped allocation with size 48.82M and limit 16.00M "
               "exceeded scoped vmem limit by 32.82M.")

    class Refused:
        def lower(self, *args):
            raise jax.errors.JaxRuntimeError(message)

    result = measure_case(Case("v1", "float32", 2048, 2048, 2048), Refused(), FAST)
    assert result["status"] == "vmem_oom" and result["samples_s"] is None
    assert result["vmem_bytes"] == int(48.82 * 2**20) and result["oom_limit_bytes"] == 16 * 2**20


def test_kernel_raising_at_run_time_is_a_row():
    class Compiled:  # compiles, then fails on the device, as a faulting kernel does
        def lower(self, *args):
            return self

        def compile(self):
            return self

        def __call__(self, a, b):
            raise jax.errors.JaxRuntimeError("INTERNAL: device fault while running the kernel")

    result = measure_case(Case("xla", "float32", 256, 256, 256), Compiled(), FAST)
    assert result["status"] == "runtime_error" and "device fault" in result["error"]
    assert result["samples_s"] is None


def test_wrong_result_is_caught_before_timing():
    calls = []

    def clock():
        calls.append(1)
        return 0.0

    wrong = jax.jit(lambda a, b: (a @ b).at[0, 0].add(1000.0))
    result = measure_case(Case("xla", "float32", 256, 256, 256), wrong, FAST, clock=clock)
    assert result["status"] == "wrong_result" and result["max_tile_error"] > 2e-2
    assert result["samples_s"] is None and result["wall_samples_s"] is None
    assert len(calls) == 2  # compile start and end only: nothing was timed
    # int8 must be exact: a single element off by one fails
    off = jax.jit(lambda a, b: jnp.matmul(a, b, preferred_element_type=jnp.int32).at[3, 3].add(1))
    assert measure_case(Case("xla", "int8", 256, 256, 256), off, FAST)["status"] == "wrong_result"


@pytest.mark.slow
def test_failures_go_on_to_the_next_case():
    cases = (Case("xla", "float32", 128, 128, 128), Case("v3", "float32", 256, 256, 256, 128, 128, 128),
             Case("xla", "float32", 256, 256, 256))
    job = MeasureJob(device=CPU, label="test", experiment="mixed", cases=cases, settings=FAST)
    df = run_measure_job(job)
    assert df.status.tolist() == ["ok", "compile_error", "ok"]


@pytest.fixture
def clean_environment(monkeypatch):
    """detect() caches its answer in os.environ: keep that from leaking into later tests."""
    monkeypatch.setattr(device_module.os, "environ",
                        {k: v for k, v in device_module.os.environ.items()
                         if k != device_module.CACHE_VARIABLE})


def test_device_detection_without_a_tpu_skips_cleanly(clean_environment):

    def never():
        raise AssertionError("must not probe without TPU hardware")

    assert detect("auto", hardware=lambda: False, probe=never) is None
    assert detect("off", hardware=lambda: True, probe=never) is None
    assert detect("cpu", probe=never) == CPU
    with pytest.raises(ValueError, match="measure.device='gpu'"):
        detect("gpu")


def test_device_detection_on_a_tpu_host(clean_environment):
    found = dict(platform="tpu", device_kind="TPU v5 lite", count=4)
    device = detect("auto", hardware=lambda: True, probe=lambda: found)
    assert device == Device("v5e", "tpu", "TPU v5 lite", 4)
    # cached for the job processes: no second probe of a TPU a job may hold
    assert json.loads(device_module.os.environ[device_module.CACHE_VARIABLE])["name"] == "v5e"
    assert detect("auto", hardware=lambda: True, probe=lambda: 1 / 0) == device
    assert from_probe(dict(platform="cpu", device_kind="cpu", count=1)) is None
    assert (target_for_device_kind("TPU v6 lite") == "v6e"
            and target_for_device_kind("TPU v9 (new)") == "tpu-v9-new")


def test_imported_tpu_generations_join_the_targets(tmp_path):
    path = tmp_path / "v6e-vm1.parquet"
    to_frame([dict(source="measured", target="v6e", experiment="xla", kernel="xla", dtype="float32",
                   m=256, k=256, n=256)], {}).to_parquet(path)
    assert known_targets([CPU], [path]) == ["v6e"]  # cpu is no compile target


def test_probe_runs_jax_devices_in_a_child_process():
    found = device_module.probe()  # this machine has no TPU: JAX falls back to the CPU
    assert found["platform"] == "cpu" and found["count"] >= 1
    assert from_probe(found) is None


def test_a_tpu_job_records_its_chip_and_retries_raised_limits():
    """The TPU job's bookkeeping, run on the CPU: chip figures, and raised limits after an OOM."""
    from tpu_matmul_repro.experiments.core.chips import CHIPS, MiB

    v5e = Device("v5e", "tpu", "TPU v5 lite", 4)
    oom = Case("xla", "float32", 256, 256, 256)
    message = ("RESOURCE_EXHAUSTED: E1001: CompileTimeScopedVmemOom: Scoped allocation with size 20.00M "
               "and limit 16.00M exceeded scoped vmem limit by 4.00M.")

    class Refused:
        def lower(self, *args):
            raise jax.errors.JaxRuntimeError(message)

    limits = []

    def build_for_test(case, limit):
        limits.append(limit)
        return Refused() if limit is None else build(case)

    job = MeasureJob(device=v5e, label="vm", experiment="v3", cases=(oom,), raise_limits_for=(oom,),
                     raised_limits_mib=(16, 32, 64, 256), settings=FAST)
    pretend = dict(platform="tpu", device_kind="TPU v5 lite", count=4, num_chips=4, dispatch_floor_s=1e-5)
    df = run_measure_job(job, runner=InProcess(build_for_test, found=pretend))
    assert limits == [None, 32 * MiB, 64 * MiB]  # 16 is too small, 256 more than v5e's VMEM
    assert df.status.tolist() == ["vmem_oom", "ok", "ok"]
    assert df.vmem_limit_bytes.tolist() == [16 * MiB, 32 * MiB, 64 * MiB]
    assert df.raised_limit.tolist() == [False, True, True]
    assert (df.peak_tflops == CHIPS["v5e"].peak_flops["float32"] / 1e12).all()
    assert (df.roofline_tflops > 0).all() and (df.num_chips == 4).all() and (df.target == "v5e").all()


# --- correctness: non-finite values, one wrong tile, precision bands, int8 on the host -------------

def _normal(size, seed=0):
    ka, kb = jax.random.split(jax.random.key(seed))
    return jax.random.normal(ka, (size, size)), jax.random.normal(kb, (size, size))


def _highest(a, b):
    return jnp.matmul(a, b, precision=jax.lax.Precision.HIGHEST)


def test_a_nan_fails_the_check_where_the_global_error_would_have_passed():
    a, b = _normal(256)
    out = _highest(a, b).at[7, 9].set(jnp.nan)
    old_rel_error = float(jnp.linalg.norm(out - _highest(a, b)) / jnp.linalg.norm(_highest(a, b)))
    assert not old_rel_error > 2e-2  # NaN > tol is False: the old check let this through as ok
    verdict = output_check.check(out, a, b, "float32", 2e-2)
    assert verdict["status"] == "wrong_result" and "1 non-finite" in verdict["error"]
    inf_call = jax.jit(lambda a, b: (a @ b).at[0, 0].set(jnp.inf))
    inf = measure_case(Case("xla", "float32", 256, 256, 256), inf_call, FAST)
    assert inf["status"] == "wrong_result" and inf["samples_s"] is None


@pytest.mark.slow
def test_one_wrong_tile_fails_the_check_where_the_global_error_would_have_passed():
    a, b = _normal(1024)
    right = _highest(a, b)
    out = right.at[256:384, 640:768].multiply(1.1)  # one 128x128 tile 10 % off
    old_rel_error = float(jnp.linalg.norm(out - right) / jnp.linalg.norm(right))
    assert old_rel_error < 2e-2  # 0.1 * 128 / 1024: under the old global limit
    verdict = output_check.check(out, a, b, "float32", 2e-2)
    assert verdict["status"] == "wrong_result" and "tile (2, 5)" in verdict["error"]
    assert verdict["max_tile_error"] == pytest.approx(0.1, rel=0.05)
    assert output_check.check(right, a, b, "float32", 2e-2)["status"] == "ok"


def test_a_nan_tolerance_is_refused_rather_than_calling_a_wrong_result_ok():
    """issue 29: with tolerance NaN, `error > tolerance` is always false: 1.5x the product was "ok"."""
    a, b = _normal(256)
    with pytest.raises(ValueError, match="tolerance=nan"):
        output_check.check(_highest(a, b) * 1.5, a, b, "float32", float("nan"))


def _bf16_pass(x):
    return x.astype(jnp.bfloat16).astype(jnp.float32)


@pytest.mark.slow
@pytest.mark.parametrize("size", [256, 1024])
def test_error_bands_give_the_precision_and_stay_under_the_tolerance(size):
    """The bands behind the tolerance and the precision column, by emulating the MXU's bf16 passes."""
    a, b = _normal(size, seed=size)
    one_pass = _highest(_bf16_pass(a), _bf16_pass(b))
    a_lo, b_lo = _bf16_pass(a - _bf16_pass(a)), _bf16_pass(b - _bf16_pass(b))
    a_hi, b_hi = _bf16_pass(a), _bf16_pass(b)
    three_pass = _highest(a_hi, b_hi) + _highest(a_hi, b_lo) + _highest(a_lo, b_hi)
    got = {name: output_check.check(out, a, b, "float32", 2e-2) for name, out in
           (("float32", _highest(a, b)), ("bf16_3x", three_pass), ("bf16", one_pass))}
    for name, verdict in got.items():
        assert verdict["status"] == "ok" and verdict["precision"] == name, (name, verdict)
    assert 1e-3 < got["bf16"]["max_tile_error"] < 4e-3  # one bf16 pass: 2.4e-3, the tolerance's basis
    ab, bb = a.astype(jnp.bfloat16), b.astype(jnp.bfloat16)
    bf16_out = jnp.matmul(ab, bb, preferred_element_type=jnp.float32).astype(jnp.bfloat16)
    verdict = output_check.check(bf16_out, ab, bb, "bfloat16", 2e-2)
    assert verdict["status"] == "ok" and verdict["max_tile_error"] < 4e-3 and verdict["precision"] == ""


def test_int8_is_checked_exactly_on_the_host_not_only_against_the_same_devices_xla(monkeypatch):
    a, b = operands(Case("xla", "int8", 256, 256, 256), 0)
    exact = jnp.matmul(a, b, preferred_element_type=jnp.int32)
    assert output_check.check(exact, a, b, "int8", 0.0)["status"] == "ok"
    off_by_one = exact.at[255, 0].add(1)  # in a corner tile: always among the host's samples
    assert output_check.host_tile_error(off_by_one, a, b, (1, 0)) == float("inf")
    # Were the device's own int32 matmul wrong in the same way, the device comparison would pass;
    # the host's int64 product of the sampled tiles still fails it.
    fooled = dict(nonfinite=0, mismatches=0, tile_err2=np.zeros((2, 2)), tile_scale2=np.ones((2, 2)),
                  diff2=0.0, ref2=1.0)
    monkeypatch.setattr(output_check, "_device_check", lambda out, a, b: fooled)
    verdict = output_check.check(off_by_one, a, b, "int8", 0.0)
    assert verdict["status"] == "wrong_result" and "host" in verdict["error"]
    assert output_check.host_tiles(1024, 1024)[:4] == [(0, 0), (0, 7), (7, 0), (7, 7)]


# --- timing: profiler device events, batched calls, the dispatch floor -----------------------------

def test_profiler_device_time_on_the_cpu_backend():
    a, b = _normal(512)
    compiled = jax.jit(lambda a, b: a @ b).lower(a, b).compile()
    compiled(a, b).block_until_ready()
    device = timers.time_profiled(compiled, [(a, b)], 5, timers.module_name(compiled))
    wall = timers.time_blocked(compiled, [(a, b)], 5, time.perf_counter)
    assert len(device) == 5 and all(0 < d for d in device)
    assert np.median(device) < 3 * np.median(wall)  # one run each, not runs merged (loose: a shared host)
    with pytest.raises(RuntimeError, match="0 runs of no_such_module"):
        timers.time_profiled(compiled, [(a, b)], 2, "no_such_module")


def _event(name, start, duration, **stats):
    return SimpleNamespace(name=name, start_ns=start, end_ns=start + duration, duration_ns=duration,
                           stats=list(stats.items()))


def test_device_events_are_read_from_the_device_plane_as_a_tpu_profile_lays_them_out():
    """A profile shaped as on a TPU (one event per program run on the device plane's "XLA Modules"
    line, ops on "XLA Ops", host threads elsewhere); only the device plane's module runs count."""
    tpu = SimpleNamespace(name="/device:TPU:0", lines=[
        SimpleNamespace(name="XLA Modules", events=[_event("jit__lambda(7)", 1000, 400, run_id=1),
                                                    _event("jit_other(8)", 1500, 900),
                                                    _event("jit__lambda(7)", 3000, 500, run_id=2)]),
        SimpleNamespace(name="XLA Ops",
                        events=[_event("fusion", 1000, 100, hlo_module="jit__lambda", run_id=1)])])
    host = SimpleNamespace(name="/host:CPU", lines=[SimpleNamespace(name="python", events=[
        _event("PjitFunction(jit(<lambda>))", 0, 10**6, hlo_module="jit__lambda", run_id=1)])])
    durations = timers.run_durations(SimpleNamespace(planes=[host, tpu]), "jit__lambda")
    assert durations == pytest.approx([4e-7, 5e-7])


@pytest.mark.slow  # cpu_rows: a measurement worker process
def test_cpu_runs_record_the_dispatch_floor_and_flag_rows_near_it(cpu_rows):
    assert (cpu_rows.dispatch_floor_s > 0).all() and (cpu_rows.dispatch_floor_s < 1e-3).all()
    assert cpu_rows.dispatch_floor_s.nunique() == 1  # measured once per run, recorded on every row
    assert cpu_rows.near_dispatch_floor.notna().all()
    assert all(len(s) == 5 for s in cpu_rows.device_samples_s)
    flagged = derive(cpu_rows.assign(dispatch_floor_s=cpu_rows.batched_seconds))  # a floor as slow as the op
    assert flagged.near_dispatch_floor.all()


def test_profiler_failure_falls_back_to_the_batched_timer_and_says_so(monkeypatch):
    def broken(*args):
        raise RuntimeError("no trace")

    monkeypatch.setattr(timers, "time_profiled", broken)
    case = Case("xla", "float32", 128, 128, 128)
    result = measure_case(case, build(case), FAST)
    assert result["status"] == "ok" and result["timer"] == "batched_async_calls"
    assert result["device_samples_s"] is None and "no trace" in result["error"]
    row = derive(to_frame([dict(m=128, k=128, n=128, **result)], {}))
    assert row.seconds[0] == row.batched_seconds[0]


# --- isolation: each configuration in a worker that can be killed ----------------------------------

def _three_cases():
    return (Case("xla", "float32", 128, 128, 128), Case("xla", "float32", 256, MARKED_K, 256),
            Case("xla", "float32", 256, 256, 256))


@pytest.fixture
def fakes_importable(monkeypatch):
    """The worker imports its stand-in build by name: put tests/ on its PYTHONPATH."""
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))


@pytest.mark.slow
def test_a_hanging_compile_becomes_a_timeout_row_and_the_run_goes_on(fakes_importable):
    # 5 s per configuration: the others (XLA at 128-256 on the CPU) take well under a second; the
    # worker's start has a timeout of its own
    job = MeasureJob(device=CPU, label="test", experiment="xla", cases=_three_cases(),
                     settings=dataclasses.replace(FAST, timeout_s=5))
    start = time.monotonic()
    df = run_measure_job(job, runner=Worker("cpu", timeout_s=5, build="measure_fakes:hang_on_marked"))
    assert df.status.tolist() == ["ok", "timeout", "ok"]
    assert "timeout_s=5 (while compiling)" in df.error[1]
    assert time.monotonic() - start < 60


@pytest.mark.slow
def test_a_crashing_compile_becomes_a_row_and_the_next_gets_a_fresh_worker(fakes_importable):
    job = MeasureJob(device=CPU, label="test", experiment="xla", cases=_three_cases(), settings=FAST)
    df = run_measure_job(job, runner=Worker("cpu", timeout_s=60, build="measure_fakes:crash_on_marked"))
    assert df.status.tolist() == ["ok", "compile_error", "ok"]
    assert "exited with code 9 while compiling" in df.error[1]


def test_blocks_beyond_physical_vmem_are_recorded_without_compiling():
    class NeverCalled(InProcess):
        def measure(self, case, limit, settings):
            raise AssertionError(f"{case.label()} must not be compiled")

    v5e = Device("v5e", "tpu", "TPU v5 lite", 1)
    v1_8192 = Case("v1", "float32", 8192, 8192, 8192)
    job = MeasureJob(device=v5e, label="vm", experiment="v1", cases=(v1_8192,), settings=FAST)
    pretend = dict(platform="tpu", device_kind="TPU v5 lite", count=1, num_chips=1, dispatch_floor_s=1e-5)
    df = run_measure_job(job, runner=NeverCalled(found=pretend))
    assert df.status.tolist() == ["vmem_oom"] and "not compiled" in df.error[0]


def test_the_measuring_worker_gets_the_jobs_platform_not_the_parents(monkeypatch):
    assert worker_env("tpu", {"JAX_PLATFORMS": "cpu"}).get("JAX_PLATFORMS") is None  # JAX finds the TPU
    assert worker_env("cpu", {"JAX_PLATFORMS": "tpu"})["JAX_PLATFORMS"] == "cpu"


@pytest.mark.compiler
def test_compile_workers_use_only_the_cpu_even_when_the_parent_asks_for_a_tpu(monkeypatch):
    """On a TPU VM jax would open the TPU in every compile worker, had the worker's environment not
    pinned the CPU before its jax was imported (checked: set in the worker, jax stays on "tpu")."""
    from tpu_matmul_repro.experiments.compile_study.tpu_compile import Compiler

    monkeypatch.setenv("JAX_PLATFORMS", "tpu")
    with Compiler("v5e", timeout_s=300) as compiler:
        found = compiler.platforms()
    assert found == dict(jax_platforms="cpu", platforms=["cpu"])


# --- devices: jax's own names, chips against devices ------------------------------------------------

@pytest.mark.parametrize("kind, target", [("TPU v5 lite", "v5e"), ("TPU v5e", "v5e"), ("TPU v5", "v5p"),
                                          ("TPU v5p", "v5p"), ("TPU v6 lite", "v6e"), ("TPU v6e", "v6e"),
                                          ("TPU v4", "v4"), ("TPU7x", "7x")])
def test_device_kind_aliases_map_to_their_target(kind, target):
    assert target_for_device_kind(kind) == target


def test_chips_are_counted_as_chips_not_tensorcores():
    assert count_chips("TPU7x", 8) == 4  # a 7x device is one of a chip's two TensorCores
    assert count_chips("TPU v5p", 4) == 4 and count_chips("TPU v4", 4) == 4  # megacore: a device is a chip
    assert count_chips("TPU v5 lite", 8) == 8
    assert count_chips("TPU7x", 8, distinct_coords=4) == 4  # coordinates, where the devices have them
    assert from_probe(dict(platform="tpu", device_kind="TPU7x", count=8, coords=4)).num_chips == 4


@pytest.mark.slow
def test_a_worker_that_cannot_start_leaves_rows_that_say_why():
    job = MeasureJob(device=CPU, label="test", experiment="xla", cases=_three_cases()[:2], settings=FAST)
    df = run_measure_job(job, runner=Worker("cpu", timeout_s=60, build="no_such_module:build"))
    assert df.status.tolist() == ["runtime_error", "runtime_error"]
    assert "did not start" in df.error[0] and "no_such_module" in df.error[0]


# --- the VM step: `snakemake --cores 1 measure` ------------------------------------------------------

@pytest.mark.slow
def test_the_measure_target_measures_and_runs_nothing_else(tmp_path):
    from test_workflow import CI_RUN, make_workdir, snakemake

    workdir = make_workdir(tmp_path)
    result = snakemake(workdir, "--cores", "1", *CI_RUN, "measure")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (workdir / "results" / "measured" / "cpu-ci.parquet").exists()
    made = {p.relative_to(workdir / "results").parts[0] for p in (workdir / "results").iterdir()}
    assert made == {"measured"}  # no compile study, correctness, table, figures or report
    assert "compile_study_job" not in result.stdout + result.stderr


@pytest.mark.slow
def test_the_measure_target_without_a_tpu_says_so(tmp_path):
    from test_workflow import CI_RUN, make_workdir, snakemake

    workdir = make_workdir(tmp_path)
    result = snakemake(workdir, "measure", "--cores", "1", *CI_RUN, "--config", "measure={device: auto}")
    assert result.returncode != 0
    assert "measure: no TPU found here (measure.device=auto)" in result.stdout + result.stderr
    assert not (workdir / "results").exists()


def test_messages_arriving_together_are_all_read_without_waiting():
    """Two messages in one pipe read: the second must not wait for more bytes (a buffered reader
    would hold it while select() saw an empty pipe, and report a false timeout)."""
    import os
    import pickle

    from tpu_matmul_repro.experiments.measure.process import HEADER

    read_end, write_end = os.pipe()
    payload = b"".join(HEADER.pack(len(m)) + m for m in (pickle.dumps(("phase", "timing")),
                                                          pickle.dumps(("result", {"status": "ok"}))))
    os.write(write_end, payload)
    worker = Worker("cpu")
    worker._proc = SimpleNamespace(stdout=os.fdopen(read_end, "rb"), wait=lambda: 0)
    deadline = time.monotonic() + 0.5
    assert worker._receive(deadline) == ("phase", "timing")
    assert worker._receive(deadline) == ("result", {"status": "ok"})
    assert worker._receive(time.monotonic() + 0.1) == ("timeout", None)
    os.close(write_end)
    assert worker._receive(time.monotonic() + 0.5) == ("exit", 0)
    worker._proc.stdout.close()
    worker._proc = None
