"""The compile study against the real TPU compiler (libtpu, deviceless): parsers, OOM path, timeouts,
unknown targets, and which compiles give a row its VMEM verdict and cycles."""
import contextlib
import dataclasses
import json
import logging
from pathlib import Path

import pandas as pd
import pytest

from tpu_matmul_repro.experiments.compile_study import cache
from tpu_matmul_repro.experiments.compile_study.study import (
    NO_STATIC_PROFILE,
    OVER_PROFILE_MAX_STEPS,
    TWO_STEP_VMEM,
    grid_steps,
    job_rows,
    job_versions,
    run_job,
    run_jobs,
    two_step_grid,
)
from tpu_matmul_repro.experiments.compile_study.tpu_compile import Compiler
from tpu_matmul_repro.experiments.core import compiler_output
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.chips import MiB, chip
from tpu_matmul_repro.experiments.core.jobs import Job
from tpu_matmul_repro.experiments.core.runtime import Progress
from tpu_matmul_repro.experiments.core.schema import ESTIMATE_STATUSES

ROOT = Path(__file__).resolve().parent.parent

# the module's compile workers (v5e, v5e_profiler) started once: every test of this file on one worker
pytestmark = pytest.mark.xdist_group("compile_study")

V1_1024 = Case("v1", "float32", 1024, 1024, 1024)
V1_2048 = Case("v1", "float32", 2048, 2048, 2048)  # the post's out of VMEM (48.82 MiB): ~12 s a compile
V1_1536 = Case("v1", "float32", 1536, 1536, 1536)  # out of VMEM too (27.57 MiB), in a third of the time


@pytest.fixture(scope="module", autouse=True)
def compile_cache_of_this_module(tmp_path_factory):
    """A compile cache of this module's own, empty at its start: a compile that two of its tests make
    alike (with `compilers` or run_job) is made once, and every compile is made here, whatever the
    machine's own cache holds. A test that is about the cache, or counts compiles, sets its own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TPU_MATMUL_REPRO_CACHE", str(tmp_path_factory.mktemp("compile-cache")))
        yield


@pytest.fixture(scope="module")
def compilers():
    """`compilers(target, profile=False)`: this module's compile worker for the target, started on first
    use and kept until the module ends (each start loads libtpu: seconds), with the module's compile
    cache. A Compiler compiles one case at a time and keeps no state between cases; the tests that need
    a fresh one (a timeout, a crash) start their own."""
    with contextlib.ExitStack() as stack:
        started = {}

        def compiler(target: str, profile: bool = False) -> Compiler:
            if (target, profile) not in started:
                compiles = cache.for_target(target, profile, job_versions(None))
                started[target, profile] = stack.enter_context(Compiler(target, profile=profile,
                                                                        timeout_s=300, cache=compiles))
            return started[target, profile]

        yield compiler


@pytest.fixture
def v5e(compilers):
    return compilers("v5e")


@pytest.fixture
def v5e_profiler(compilers):
    return compilers("v5e", profile=True)


@pytest.mark.compiler
def test_vmem_used_is_parsed_from_real_output(v5e):
    result = v5e.compile(V1_1024)
    assert result["status"] == "ok"
    # A, B and C (4 MiB each) are whole VMEM blocks; the compiler adds a little scratch.
    assert 12 * MiB <= result["vmem_bytes"] < 16 * MiB


@pytest.mark.compiler
def test_out_of_vmem_is_a_result_with_sizes(v5e):
    result = v5e.compile(V1_2048)
    assert result["status"] == "vmem_oom"
    assert "Scoped allocation with size 48.82M and limit 16.00M" in result["error"]
    assert result["vmem_bytes"] == round(48.82 * MiB)
    assert result["oom_limit_bytes"] == chip("v5e").default_vmem_limit_bytes == 16 * MiB


@pytest.mark.compiler
def test_default_limits_in_chip_table_match_the_compiler(compilers):
    result = compilers("v6e").compile(V1_2048)
    assert result["status"] == "vmem_oom"
    assert result["oom_limit_bytes"] == chip("v6e").default_vmem_limit_bytes == 32 * MiB


@pytest.mark.compiler
def test_xla_cycles_are_parsed(v5e):
    result = v5e.compile(Case("xla", "bfloat16", 4096, 4096, 4096))
    assert result["status"] == "ok" and result["vmem_bytes"] is None
    # At v5e's 1.5 GHz and 197 TFLOP/s peak, 2 * 4096^3 FLOPs take at least 1.05M cycles.
    assert 1.0e6 < result["est_cycles"] < 2.0e6


@pytest.mark.compiler
def test_pallas_cycles_need_the_profile_flag(v5e, v5e_profiler):
    case = Case("v3", "float32", 512, 512, 512, 128, 128, 128)
    assert v5e.compile(case)["est_cycles"] is None
    cycles = v5e_profiler.compile(case)["est_cycles"]
    assert 64 * 500 < cycles < 64 * 1500  # 64 grid steps of a few hundred cycles each


@pytest.mark.compiler
def test_unknown_target_is_a_clear_error():
    with pytest.raises(ValueError,
                       match=r"target='v9' unknown; expected one of \['7x', 'v4', 'v5e', 'v5p', 'v6e'\]"):
        Compiler("v9")


@pytest.mark.compiler
def test_hung_compile_becomes_a_timeout_row():
    with Compiler("v5e", timeout_s=0.01) as compiler:  # less than libtpu takes to load
        result = compiler.compile(V1_1024)
        assert result["status"] == "timeout" and "timeout_s=0.01" in result["error"]
        compiler.timeout_s = 300  # the killed worker is replaced on the next call
        assert compiler.compile(V1_1024)["status"] == "ok"


@pytest.mark.compiler
def test_run_job_rows_and_raised_limits():
    cases = (V1_1024, V1_1536, Case("v3", "float32", 1024, 1024, 1024, 128, 128, 128))
    job = Job("v5e", "v1", cases, raise_limits_for=cases[:2], raised_limits_mib=(24, 32, 48, 256),
              timeout_s=300, profile_max_steps=512, static_profile=True)  # v3's 512 steps: profiled
    df = run_job(job)
    # Only V1_1536 ran out (27.57 MiB requested): 24 MiB is below that, 256 MiB above v5e's VMEM; it
    # fits at 32 MiB, so its 48 MiB row is the 32 MiB compile's (not compiled again).
    assert len(df) == 3 + 2
    v1_1536 = df[(df.m == 1536)].set_index("vmem_limit_bytes")
    assert v1_1536.status.to_dict() == {16 * MiB: "vmem_oom", 32 * MiB: "ok", 48 * MiB: "ok"}
    assert v1_1536.vmem_method.to_dict() == {16 * MiB: "compiled", 32 * MiB: "compiled",
                                             48 * MiB: "fits_lower_limit"}
    assert 24 * MiB < v1_1536.loc[32 * MiB, "vmem_bytes"] < 32 * MiB  # the raised limit made it fit
    assert v1_1536.loc[48 * MiB, "compile_s"] == 0
    for column in ("vmem_bytes", "est_cycles", "tflops"):
        assert v1_1536.loc[48 * MiB, column] == v1_1536.loc[32 * MiB, column]
    ok = df[df.status == "ok"]
    assert ok.est_cycles.notna().all() and (ok.tflops > 0).all()
    assert (ok.tflops <= ok.roofline_tflops * 1.0001).all()
    assert set(ok.cycles_method) == {"profiled"}
    assert df[df.kernel == "v3"].vmem_method.tolist() == ["compiled"]
    assert (df.source == "estimate").all() and df.libtpu_version.iloc[0] != "not installed"
    assert set(df.status) <= set(ESTIMATE_STATUSES)


@pytest.mark.compiler
@pytest.mark.parametrize("target, case, limits_mib", [
    ("v5e", V1_1536, (32, 64)),
    ("v5e", Case("v5", "bfloat16", 2048, 4096, 2048, 1024, 1024, 1024), (32, 64)),
    ("v6e", Case("v3", "float32", 2048, 2048, 2048, 1024, 1024, 1024), (64, 96)),
])
def test_a_raised_limit_changes_whether_a_kernel_fits_not_what_it_compiles_to(compilers, target, case,
                                                                            limits_mib):
    """Why run_job does not compile a kernel again at a raised limit above one it fits in
    (vmem_method = fits_lower_limit): at every limit it fits in, the same VMEM use and cycles."""
    profiler = compilers(target, profile=True)
    results = [profiler.compile(case, mib * MiB) for mib in limits_mib]
    assert {(r["status"], r["vmem_bytes"], r["est_cycles"]) for r in results} == {
        ("ok", results[0]["vmem_bytes"], results[0]["est_cycles"])}, results


def test_changed_format_fails_loudly():
    with pytest.raises(compiler_output.FormatChanged, match="used_scoped_memory_configs"):
        compiler_output.vmem_bytes_used('custom-call(), backend_config={"scoped_memory":[]}')
    with pytest.raises(compiler_output.FormatChanged, match="bundle_analysis_data"):
        compiler_output.pallas_estimated_cycles('{"cycles_estimate":"5"}')
    with pytest.raises(compiler_output.FormatChanged, match="estimated_cycles"):
        compiler_output.xla_estimated_cycles("fusion(), backend_config={}")
    with pytest.raises(compiler_output.FormatChanged, match="Scoped allocation with size"):
        compiler_output.vmem_oom_sizes("RESOURCE_EXHAUSTED: CompileTimeScopedVmemOom: out of VMEM (50 MB)")
    with pytest.raises(compiler_output.FormatChanged, match="memory_space"):
        compiler_output.vmem_bytes_used('"used_scoped_memory_configs":[{"space":"1","size":"5"}]')


def test_physical_vmem_oom_message_is_parsed():
    message = ("RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space "
               "vmem. Used 195.84M of 127.94M vmem. Exceeded vmem capacity by 67.90M.")
    assert compiler_output.is_vmem_oom(message)
    assert compiler_output.vmem_oom_sizes(message) == (round(195.84 * MiB), round(127.94 * MiB))


@pytest.mark.parametrize("spelling", ["resolved", "as imported", "through the package"])
def test_an_old_compilers_error_keeps_its_finding_and_not_the_checkout_path(spelling, tmp_path, monkeypatch):
    # jax 0.4.38's words for v1 at 2048 on v5e (the post toolchain): the custom call quoted whole, then
    # the sentence that matters, past the first 1000 characters.
    checkout = Path(compiler_output.__file__).resolve().parents[2]
    if spelling == "as imported":  # the checkout reached through a symlink: both spellings are stripped
        (tmp_path / "link").symlink_to(checkout)
        monkeypatch.setattr(compiler_output, "_CHECKOUT_SPELLINGS",
                            [f"{tmp_path / 'link'}/", f"{checkout}/"])
        checkout = tmp_path / "link"
    kernel_folder = "tpu_matmul_repro/kernels" if spelling == "through the package" else "kernels"
    message = ("RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem while allocating on stack for "
               '%_matmul_v1 = f32[2048,2048]{1,0:T(8,128)} custom-call(...), metadata={op_name="pallas_call"'
               f' source_file="{checkout}/{kernel_folder}/v1_naive.py" source_line=37}}, backend_config='
               '{"custom_call_config": {"body": "' + "TUzvUgFNTElS" * 120 + '", "needs_layout_passes": true}}'
               ". Scoped allocation with size 48.82M and limit 16.00M exceeded scoped vmem limit by 32.82M.")
    failure = compiler_output.compile_failure(RuntimeError(message))
    assert failure["status"] == "vmem_oom"
    assert (failure["vmem_bytes"], failure["oom_limit_bytes"]) == (round(48.82 * MiB), 16 * MiB)
    assert failure["error"].endswith("Scoped allocation with size 48.82M and limit 16.00M exceeded scoped "
                                     "vmem limit by 32.82M.")  # whole: nothing cut off
    assert 'source_file="kernels/v1_naive.py"' in failure["error"] and str(checkout) not in failure["error"]
    assert '"body": "…"' in failure["error"] and len(failure["error"]) < 600


def test_parsers_on_known_strings():
    text = ('"used_scoped_memory_configs":[{"memory_space":"1","offset":"0","size":"11632640"},'
            '{"memory_space":"0","offset":"0","size":"99"}]')
    assert compiler_output.vmem_bytes_used(text) == 11632640
    assert compiler_output.vmem_oom_sizes("Scoped allocation with size 18.36M and limit 16.00M") == (
        round(18.36 * 2**20), 16 * 2**20)
    assert compiler_output.pallas_estimated_cycles('"bundle_analysis_data":{"estimated_cycles":"786"}') == 786
    # 7x's compiled HLO where XLA prefetches A into VMEM before the kernel (libtpu 0.0.52), and where not
    call = ('ROOT %_matmul_v5.1 = bf16[2048,4096]{1,0} custom-call({}, %b.1), custom_call_target='
            '"tpu_custom_call", operand_layout_constraints={bf16[2048,4096]{1,0}}')
    assert compiler_output.prefetched_operands(call.replace("{}", "%copy-done", 1)) == 1
    assert compiler_output.prefetched_operands(call.replace("{}", "%a.1", 1)) == 0
    with pytest.raises(compiler_output.FormatChanged):
        compiler_output.prefetched_operands("ROOT %dot = f32[8,8] dot(%a, %b)")


class RecordingCompiler:
    """A stand-in for a compile worker: what it was asked (with which options), and a result whose VMEM
    says the grid's tiles and whose cycles (a profiler's, or XLA's cost model's) its steps."""

    def __init__(self, profile: bool):
        self.profile, self.asked = profile, []

    def compile(self, case, limit=None, options=None):
        self.asked.append((case, options))
        grid = case.grid() or (1,)
        cycles = 500 + 9 * grid_steps(case) if self.profile or not case.facts.pallas else None
        return dict(status="ok", vmem_bytes=1000 + grid[0] * grid[-1], oom_limit_bytes=None, error="",
                    compile_s=0.0, est_cycles=cycles, prefetched=0)


@pytest.mark.parametrize("static_profile, case, compiled_by, cycles_method", [
    # the default run: plain compiles, Pallas without cycles, XLA with its cost model's
    (False, Case("v5", "bfloat16", 1024, 1024, 1024, 512, 512, 512), "plain", NO_STATIC_PROFILE),
    (False, Case("xla", "bfloat16", 1024, 1024, 1024), "plain", "xla_cost_model"),
    # the profile study: a grid of at most profile_max_steps steps (8 here) profiled whole...
    (True, Case("v5", "bfloat16", 1024, 1024, 1024, 512, 512, 512), "profiler", "profiled"),
    (True, Case("v2", "float32", 2048, 2048, 2048, 1024, 2048, 1024), "profiler", "profiled"),
    # ... a larger one compiled plainly, without cycles; XLA as in the default run
    (True, Case("v5", "bfloat16", 2048, 1024, 1024, 512, 512, 512), "plain", OVER_PROFILE_MAX_STEPS),
    (True, Case("xla", "bfloat16", 1024, 1024, 1024), "plain", "xla_cost_model"),
])
def test_a_profiling_job_profiles_whole_grids_up_to_profile_max_steps_only(static_profile, case,
                                                                          compiled_by, cycles_method):
    job = Job("v5e", "v5", (case,), timeout_s=1, profile_max_steps=8, static_profile=static_profile)
    plain, profiler = RecordingCompiler(False), RecordingCompiler(True)
    (row,) = job_rows(job, plain, profiler, Progress(1, logging.getLogger("test")))
    used, unused = (profiler, plain) if compiled_by == "profiler" else (plain, profiler)
    assert used.asked == [(case, None)] and unused.asked == []  # the whole grid, one compile
    assert (row["vmem_method"], row["cycles_method"]) == ("compiled", cycles_method)
    grid = case.grid() or (1,)
    assert row["vmem_bytes"] == 1000 + grid[0] * grid[-1]
    has_cycles = cycles_method in ("profiled", "xla_cost_model")
    assert row["est_cycles"] == (500 + 9 * grid_steps(case) if has_cycles else None)
    assert (row.get("tflops") is not None) == has_cycles


@pytest.mark.parametrize("case, probe", [
    (Case("v5", "bfloat16", 8192, 4096, 14336, 512, 1024, 2048), (1024, 2048, 4096)),
    (Case("v5", "bfloat16", 256, 7168, 4096, 256, 512, 1024), (256, 1024, 2048)),  # one m step
    (Case("v3", "float32", 4096, 4096, 4096, 4096, 4096, 128), (4096, 4096, 256)),  # one along m, k
])
def test_a_two_step_job_takes_the_vmem_verdict_from_the_two_step_grid(case, probe):
    job = Job("v6e", "advice", (case,), timeout_s=1, profile_max_steps=16, two_step_vmem=True)
    plain = RecordingCompiler(False)
    (row,) = job_rows(job, plain, RecordingCompiler(True), Progress(1, logging.getLogger("test")))
    assert [(c.m, c.k, c.n) for c, _ in plain.asked] == [probe]
    assert (row["m"], row["k"], row["n"], row["vmem_method"]) == (case.m, case.k, case.n, "representative")
    probe_grid = plain.asked[0][0].grid()
    assert row["vmem_bytes"] == 1000 + probe_grid[0] * probe_grid[-1]
    plain = RecordingCompiler(False)  # the pipeline's own jobs: at full size
    (row,) = job_rows(dataclasses.replace(job, two_step_vmem=False), plain, RecordingCompiler(True),
                      Progress(1, logging.getLogger("test")))
    assert plain.asked == [(case, None)] and row["vmem_method"] == "compiled"


def test_two_step_vmem_only_where_the_record_shows_the_full_size_s_verdict():
    """The record of benchmarks/small_grid_vmem.py: for each (target, libtpu) in TWO_STEP_VMEM, checked
    candidate blocks of three shapes, ok and out of VMEM among them, each two-step grid's verdict and
    VMEM bytes are the full size's."""
    record = pd.read_csv(ROOT / "data" / "small_grid_vmem_check.csv", dtype={"libtpu_version": str})
    for target, libtpu in TWO_STEP_VMEM:
        mine = record[(record.target == target) & (record.libtpu_version == libtpu)]
        assert len(mine) >= 30 and set(mine.full_status) == {"ok", "vmem_oom"}, (target, libtpu)
        for r in mine.itertuples():
            case = Case(r.kernel, r.dtype, r.m, r.k, r.n, r.bm, r.bk, r.bn)
            assert r.two_step == "x".join(map(str, two_step_grid(case).grid())), case.label()
        assert (mine.full_status == mine.two_step_status).all(), (target, libtpu)
        assert (mine.full_vmem_bytes == mine.two_step_vmem_bytes).all(), (target, libtpu)


@pytest.mark.compiler
@pytest.mark.parametrize("target, case", [
    ("v5e", Case("v3", "float32", 2048, 2048, 2048, 512, 1024, 1024)),    # out of VMEM today
    ("v5e", Case("v3", "float32", 4096, 4096, 4096, 256, 256, 256)),
    ("v5e", Case("v5", "bfloat16", 4096, 4096, 4096, 512, 1024, 1024)),
    ("v5e", Case("v5", "bfloat16", 2048, 2048, 2048, 1024, 1024, 1024)),  # out of VMEM
    ("v5e", Case("v5", "int8", 8192, 8192, 8192, 512, 512, 512)),
    ("v5e", Case("v5", "bfloat16", 4096, 4096, 4096, 256, 4096, 512)),    # one k step
    ("v6e", Case("v5", "bfloat16", 8192, 8192, 8192, 512, 1024, 1024)),
    ("v6e", Case("v3", "float32", 2048, 2048, 2048, 1024, 1024, 1024)),
])
def test_blocked_vmem_from_a_two_step_grid_matches_the_full_compile(compilers, target, case):
    """What a two-step job (the advisor's) derives for a 3-D block grid, a plain compile of its two-step
    grid, against a plain compile of the full grid: the same verdict and bytes."""
    probe = two_step_grid(case)
    assert grid_steps(probe) <= 8
    full, small = compilers(target).compile(case), compilers(target).compile(probe)
    assert (small["status"], small["vmem_bytes"], small["oom_limit_bytes"]) == (
        full["status"], full["vmem_bytes"], full["oom_limit_bytes"]), (small, full)


@pytest.mark.compiler
def test_run_job_raises_the_limit_and_reuses_the_cache(tmp_path, monkeypatch):
    """Plain compiles, as the default run makes them (profiled ones:
    test_a_profiling_job_profiles_whole_grids_up_to_profile_max_steps_only)."""
    monkeypatch.setenv("TPU_MATMUL_REPRO_CACHE", str(tmp_path / "cache"))
    cases = (Case("v5", "bfloat16", 4096, 4096, 4096, 512, 1024, 1024),
             Case("v5", "bfloat16", 4096, 4096, 4096, 1024, 1024, 1024),
             Case("xla", "bfloat16", 1024, 1024, 1024))
    job = Job("v5e", "v5", cases, raise_limits_for=cases[1:2], raised_limits_mib=(32,), timeout_s=300,
              profile_max_steps=128)
    first = run_job(job)
    assert list(first.vmem_method) == ["compiled"] * 4
    assert list(first.status) == ["ok", "vmem_oom", "ok", "ok"]  # (1024,1024,1024) fits at 32 MiB
    assert list(first.cycles_method) == ["no_static_profile", "", "no_static_profile", "xla_cost_model"]
    entries = sorted((tmp_path / "cache").rglob("*.json"))
    assert entries
    second = run_job(job)  # every compile from the cache: the same rows, compile times included
    pd.testing.assert_frame_equal(first.drop(columns="git_sha"), second.drop(columns="git_sha"))
    # a corrupt entry is recomputed, not trusted: XLA's, the quickest of the job's compiles to make again
    xla = next(e for e in entries if json.loads(e.read_text())["case"]["kernel"] == "xla")
    xla.write_text('{"key": "something else"')
    third = run_job(job)
    pd.testing.assert_frame_equal(first.drop(columns=["git_sha", "compile_s"]),
                                  third.drop(columns=["git_sha", "compile_s"]))


@pytest.mark.compiler
def test_run_jobs_shares_its_compile_workers_and_gives_each_job_s_rows(monkeypatch):
    """Several small jobs of one target in one Snakemake job start the compile workers once, and give
    the rows each job gives on its own, in order; jobs for different targets are refused up front."""
    import subprocess

    monkeypatch.setenv("TPU_MATMUL_REPRO_CACHE", "off")
    jobs = [Job("v5e", "xla", (Case("xla", dtype, 512, 512, 512),), timeout_s=300, profile_max_steps=16)
            for dtype in ("float32", "bfloat16")]
    with pytest.raises(ValueError, match="one target"):
        run_jobs([jobs[0], dataclasses.replace(jobs[1], target="v6e")])
    started, popen = [], subprocess.Popen
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **kw: started.append(a) or popen(*a, **kw))
    together = run_jobs(jobs)
    workers = [a for a in started if "tpu_matmul_repro.experiments.compile_study.compile_worker" in a[0]]
    assert len(workers) == 1  # the plain worker only: XLA needs no profile
    monkeypatch.setattr(subprocess, "Popen", popen)
    apart = pd.concat([run_job(job) for job in jobs], ignore_index=True)
    pd.testing.assert_frame_equal(together.drop(columns=["compile_s", "git_sha"]),
                                  apart.drop(columns=["compile_s", "git_sha"]))
    assert list(together.dtype) == ["float32", "bfloat16"]


@pytest.mark.compiler
def test_a_crashing_static_profiler_leaves_the_vmem_verdict_and_says_why():
    """v4: libtpu's static profiler aborts (exit -6) on every kernel. Each row keeps the plain
    compile's VMEM verdict, says why it has no cycles, and after the first crash the job stops trying
    the profiler (each crash costs a worker restart)."""
    cases = (Case("v3", "float32", 1024, 1024, 1024, 256, 256, 256),
             Case("v5", "bfloat16", 2048, 2048, 2048, 512, 1024, 1024))
    job = Job("v4", "v4", cases, timeout_s=300, profile_max_steps=64, static_profile=True)  # profiled
    df = run_job(job)
    assert list(df.status) == ["ok", "ok"] and df.vmem_bytes.gt(0).all()
    assert list(df.cycles_method) == ["profiler_crashed", "profiler_crashed"]
    assert df.est_cycles.isna().all() and df.tflops.isna().all()
    assert df.error.str.startswith("no cycle estimate: libtpu's static profiler crashed").all()
    assert "did not run the profiler again" in df.error.iloc[1]


def _oom_row(case: Case, vmem_bytes=20 * MiB) -> tuple[Case, dict]:
    return case, dict(status="vmem_oom", vmem_bytes=vmem_bytes, oom_limit_bytes=16 * MiB)


def test_dominated_result_needs_the_same_bk_no_smaller_bm_and_bn_and_the_same_single_steps():
    from tpu_matmul_repro.experiments.compile_study.study import dominated_result

    small = Case("v5", "bfloat16", 4096, 4096, 4096, 512, 1024, 1024)
    split = Case("v2", "bfloat16", 4096, 4096, 4096, 1024, 4096, 1024)
    out_of_vmem = [_oom_row(small), _oom_row(split)]
    for bm, bn in ((512, 2048), (1024, 1024), (1024, 2048)):
        result = dominated_result(dataclasses.replace(small, bm=bm, bn=bn), out_of_vmem)
        assert result["status"] == "vmem_oom" and result["vmem_bytes"] is None, (bm, bn)
        assert result["oom_limit_bytes"] == 16 * MiB and result["compile_s"] == 0
        assert "(512,1024,1024)" in result["error"] and "20.00 MiB" in result["error"]
    not_dominated = [
        dataclasses.replace(small, bm=256, bn=2048),           # smaller along m
        dataclasses.replace(small, bk=2048),                   # another bk (another job of a split search)
        dataclasses.replace(small, bm=1024, bk=4096),          # a single k step
        dataclasses.replace(small, dtype="int8"),              # another problem
        dataclasses.replace(small, m=8192, k=8192, n=8192),    # another size
        dataclasses.replace(split, bm=2048, bn=2048),          # not a 3-D block grid (v2's blocks follow N)
    ]
    for case in not_dominated:
        assert dominated_result(case, out_of_vmem) is None, case
    assert dominated_result(small, []) is None


@pytest.mark.compiler
def test_run_job_does_not_compile_searched_blocks_dominated_by_an_out_of_vmem_one(tmp_path, monkeypatch):
    """A searched configuration whose blocks are at least as large as one out of VMEM (same bk and
    problem, single steps along the same axes) gets a vmem_oom row without a compile, in either job
    order; the post's own configurations are always compiled. The derived verdicts against compiles
    (compile_study.skip_dominated: false; a small grid's verdict against the full size's is checked
    above): out of VMEM. A job that does not ask (the release history's) compiles every one."""
    from tpu_matmul_repro.experiments.compile_study import tpu_compile

    monkeypatch.setenv("TPU_MATMUL_REPRO_CACHE", str(tmp_path / "cache"))
    compiled = []
    real_compile = tpu_compile.Compiler._compile

    def counting(self, case, limit, options=None):
        compiled.append(case)
        return real_compile(self, case, limit, options)

    monkeypatch.setattr(tpu_compile.Compiler, "_compile", counting)
    oom = Case("v5", "bfloat16", 4096, 4096, 4096, 512, 2048, 1024)
    dominated = [dataclasses.replace(oom, bn=2048), dataclasses.replace(oom, bm=1024)]
    post = dataclasses.replace(oom, bm=1024, bn=2048)  # dominated too, but one of the post's: compiled
    fits = dataclasses.replace(oom, bk=512)
    cases = (*dominated, post, oom, fits)  # larger blocks first: the job sorts them
    job = Job("v5e", "v5", cases, raise_limits_for=(post,), raised_limits_mib=(), timeout_s=300,
              profile_max_steps=16, skip_dominated=True)
    df = run_job(job)
    probes = set(dominated)
    assert compiled and not probes & set(compiled)
    assert [(r.bm, r.bk, r.bn) for r in df.itertuples()] == [(c.bm, c.bk, c.bn) for c in cases]
    assert list(df.status) == ["vmem_oom"] * 4 + ["ok"]
    assert list(df.vmem_method) == ["dominated", "dominated", "compiled", "compiled", "compiled"]
    assert df.vmem_bytes.iloc[:2].isna().all() and df.vmem_bytes.iloc[2:].notna().all()
    assert (df.compile_s.iloc[:2] == 0).all() and list(df.search) == [True, True, False, True, True]
    reversed_order = run_job(dataclasses.replace(job, cases=cases[::-1]))  # from the cache
    pd.testing.assert_frame_equal(reversed_order.iloc[::-1].reset_index(drop=True).drop(columns="git_sha"),
                                  df.drop(columns="git_sha"))
    every = run_job(dataclasses.replace(job, skip_dominated=False))
    assert list(every.status) == list(df.status) and "dominated" not in set(every.vmem_method)
    assert every.vmem_bytes.notna().all() and probes <= set(compiled)
    history_style = run_job(Job("v5e", "v5", cases, timeout_s=300, profile_max_steps=16))
    assert "dominated" not in set(history_style.vmem_method)


@pytest.mark.compiler
def test_blocks_beyond_physical_vmem_keep_their_bound_rather_than_being_dominated(monkeypatch):
    """A searched configuration whose blocks alone exceed the core's VMEM keeps its block_bound row (with
    the lower bound) even when a smaller one of the same bk ran out of VMEM. The smaller one's compile is
    faked: only the order of the two rules is under test."""
    from tpu_matmul_repro.experiments.compile_study import tpu_compile

    monkeypatch.setenv("TPU_MATMUL_REPRO_CACHE", "off")

    def out_of_vmem(self, case, limit, options=None):
        return dict(status="vmem_oom", vmem_bytes=200 * MiB, oom_limit_bytes=16 * MiB, est_cycles=None,
                    error="RESOURCE_EXHAUSTED: CompileTimeScopedVmemOom (faked)", compile_s=0.1)

    monkeypatch.setattr(tpu_compile.Compiler, "_compile", out_of_vmem)
    small = Case("v5", "bfloat16", 16384, 16384, 16384, 4096, 512, 4096)
    huge = dataclasses.replace(small, bm=8192, bn=8192)  # grids (4,4,32) and (2,2,32): no single steps
    df = run_job(Job("v5e", "v5", (small, huge), timeout_s=300, profile_max_steps=16, skip_dominated=True))
    assert list(df.vmem_method) == ["compiled", "block_bound"]
    assert df.vmem_bytes.iloc[1] > chip("v5e").vmem_bytes


def test_the_compile_cache_key_hashes_only_what_decides_a_compile(tmp_path):
    """Editing the cache, the parent's process code, planning or table code keeps every cached compile;
    editing a kernel, the compile worker or a compiler-output parser misses."""
    import shutil

    from tpu_matmul_repro.experiments.compile_study.cache import compile_code_digest
    from tpu_matmul_repro.experiments.core.code_inputs import ROOT

    root = tmp_path / "repo"
    for package in ("kernels", "experiments"):
        shutil.copytree(ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    before = compile_code_digest(root)

    def edited(relative: str) -> str:
        path = root / relative
        original = path.read_text()
        path.write_text(original + "\n\ndef _an_edit():\n    return 1\n")
        try:
            return compile_code_digest(root)
        finally:
            path.write_text(original)

    for kept in ("experiments/compile_study/cache.py", "experiments/compile_study/tpu_compile.py",
                 "experiments/compile_study/study.py", "experiments/plan/job_lists.py",
                 "experiments/plan/config.py", "experiments/core/atomic_write.py",
                 "experiments/core/cache_dirs.py",
                 "experiments/core/code_inputs.py", "experiments/core/jobs.py"):
        assert edited(kept) == before, f"an edit of {kept} would throw away every cached compile"
    for missed in ("kernels/v3_block.py", "kernels/v5_accumulator.py", "kernels/spec.py",
                   "experiments/compile_study/compile_worker.py", "experiments/core/compiler_output.py",
                   "experiments/core/cases.py"):
        assert edited(missed) != before, f"an edit of {missed} must recompile"
    path = root / "kernels" / "v3_block.py"
    path.write_text("# a comment only\n" + path.read_text())
    assert compile_code_digest(root) == before  # comments do not change a compile


def test_an_error_keeps_no_source_line_of_the_kernel():
    """The compiler quotes the pallas_call's source line; it moves with any edit above it (which the
    compile cache's key ignores), so rows and cached entries keep the file but not the line."""
    from tpu_matmul_repro.experiments.core.compiler_output import readable_error

    quoted = ('metadata={op_name="jit(_matmul_v2)/pallas_call" source_file="kernels/v2_parallel.py" '
              'source_line=40}. Scoped allocation with size 36.00M and limit 16.00M exceeded')
    kept = readable_error(quoted)
    assert "source_line" not in kept and 'source_file="kernels/v2_parallel.py"' in kept
    assert kept.endswith("Scoped allocation with size 36.00M and limit 16.00M exceeded")
