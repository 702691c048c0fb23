"""The measurement harness, run on JAX's CPU device with the same code a TPU run uses."""
import itertools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from experiments.measure import device as device_module
from experiments.analysis.aggregate import check_unique, combine, load_measured
from experiments.core.cases import Case
from experiments.measure.device import Device, detect, from_probe, known_targets, target_for_device_kind
from experiments.measure.harness import (MeasureJob, Settings, build, calls_per_batch, measure_case, operands,
                                 run_measure_job, time_batched)
from experiments.measure.statistics import derive, summarize
from experiments.core.schema import frame as to_frame

CPU = Device("cpu", "cpu", "cpu", 1)
FAST = Settings(warmup=1, samples=5, input_sets=2, min_sample_s=0.002, max_calls=20)


def test_summary_statistics():
    s = summarize([5.0, 1.0, 4.0, 2.0, 3.0])
    assert s == dict(n_samples=5, seconds=3.0, p25_seconds=2.0, p75_seconds=4.0)
    assert summarize([])["n_samples"] == 0 and np.isnan(summarize(None)["seconds"])


def test_statistics_are_derived_from_raw_samples():
    df = pd.DataFrame(dict(m=[1000, 1000], k=[1000, 1000], n=[1000, 1000],
                           samples_s=[[1e-3, 2e-3, 3e-3, 4e-3, 5e-3], None], wall_samples_s=[[4e-3] * 5, None]))
    out = derive(df)
    assert out.seconds[0] == 3e-3 and out.n_samples[0] == 5 and out.wall_seconds[0] == 4e-3
    assert out.tflops[0] == pytest.approx(2e9 / 3e-3 / 1e12)
    assert out.n_samples[1] == 0 and np.isnan(out.tflops[1])


@pytest.fixture(scope="module")
def cpu_rows():
    cases = tuple(Case("xla", dtype, s, s, s) for dtype in ("float32", "bfloat16", "int8") for s in (128, 256))
    job = MeasureJob(device=CPU, label="test", experiment="xla", cases=cases, settings=FAST)
    return derive(run_measure_job(job))


def test_cpu_measurement_of_xla_gives_plausible_rows(cpu_rows):
    assert (cpu_rows.status == "ok").all(), cpu_rows.error.tolist()
    assert (cpu_rows.source == "measured").all() and (cpu_rows.target == "cpu").all()
    assert (cpu_rows.n_samples >= 5).all()
    assert (cpu_rows.p25_seconds <= cpu_rows.seconds).all() and (cpu_rows.seconds <= cpu_rows.p75_seconds).all()
    assert (cpu_rows.tflops > 0).all() and (cpu_rows.wall_seconds > 0).all()
    assert all(len(s) == 5 for s in cpu_rows.samples_s) and all(len(s) == 5 for s in cpu_rows.wall_samples_s)
    assert (cpu_rows[cpu_rows.dtype == "int8"].rel_error == 0).all()
    assert (cpu_rows.rel_error < 1e-2).all()
    for col in ("jax_version", "jaxlib_version", "libtpu_version", "git_sha", "timestamp", "device_kind"):
        assert cpu_rows[col].notna().all() and (cpu_rows[col] != "").all(), col
    assert (cpu_rows.num_chips == 1).all() and (cpu_rows.timer == "batched_async_calls").all()


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
    s = Settings(min_sample_s=0.02, max_calls=100, max_batch_bytes=1000)
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
    assert result["status"] == "wrong_result" and result["rel_error"] > 2e-2
    assert result["samples_s"] is None and result["wall_samples_s"] is None
    assert len(calls) == 2  # compile start and end only: nothing was timed
    # int8 must be exact: a single element off by one fails
    off = jax.jit(lambda a, b: jnp.matmul(a, b, preferred_element_type=jnp.int32).at[3, 3].add(1))
    assert measure_case(Case("xla", "int8", 256, 256, 256), off, FAST)["status"] == "wrong_result"


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
                        {k: v for k, v in device_module.os.environ.items() if k != device_module.CACHE_VARIABLE})


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
    assert target_for_device_kind("TPU v6 lite") == "v6e" and target_for_device_kind("TPU v9 (new)") == "tpu-v9-new"


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
    from experiments.core.chips import CHIPS, MiB

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
    df = run_measure_job(job, build=build_for_test)
    assert limits == [None, 32 * MiB, 64 * MiB]  # 16 is too small, 256 more than v5e's VMEM
    assert df.status.tolist() == ["vmem_oom", "ok", "ok"]
    assert df.vmem_limit_bytes.tolist() == [16 * MiB, 32 * MiB, 64 * MiB]
    assert df.raised_limit.tolist() == [False, True, True]
    assert (df.peak_tflops == CHIPS["v5e"].peak_flops["float32"] / 1e12).all()
    assert (df.roofline_tflops > 0).all() and (df.num_chips == 4).all() and (df.target == "v5e").all()
