"""The advisor's command line as a user meets it: the answer on top with code that runs, progress on
stderr for a long call, a time budget it keeps, the model of the current folder's results/ or none,
an answer kept when its cache cannot be written, and signals and pipes as a Unix tool takes them:
no traceback, and no compile worker outliving the call."""
import collections
import errno
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from advise_fakes import StandInCompiler
from test_advise import MODEL, write_run
from test_advise_cli_property import PROGRESS, call, stand_in

from tpu_matmul_repro.advise import cli, search
from tpu_matmul_repro.advise import model as advisor_model
from tpu_matmul_repro.advise import ranking as table

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent


@pytest.fixture
def user_folder(tmp_path):
    write_run(tmp_path / "results")
    return tmp_path


Row = collections.namedtuple("Row", "kernel dtype m k n bm bk bn padded_shape vmem_limit_mib")


@pytest.mark.parametrize("row", [
    Row("v5", "bfloat16", 256, 384, 512, 128, 128, 256, "", 16.0),
    Row("v5", "int8", 256, 256, 256, 128, 256, 128, "", 16.0),
    Row("v3", "float32", 200, 300, 250, 128, 128, 128, "256x384x256", 32.0),  # zero-padded
])
def test_the_pasted_lines_run_the_kernel_with_its_blocks(row):
    """The lines under the recommendation, pasted into pl.pallas_call with the kernel body they name,
    compute A @ B (Pallas interpret mode), padded as their comment says."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    from tpu_matmul_repro.kernels.v3_block import matmul_v3_block_kernel
    from tpu_matmul_repro.kernels.v5_accumulator import matmul_v5_kernel, v5_out_dtype

    lines = table.block_lines(row)
    assert any("pltpu.CompilerParams(" in x for x in lines) and any("pl.BlockSpec((" in x for x in lines)
    assert f"vmem_limit_bytes={row.vmem_limit_mib:.0f} * 1024 * 1024" in "".join(lines)
    code = "\n".join(x for x in lines if not x.strip().startswith("#"))
    arguments = eval(f"dict(\n{code}\n)", {"pl": pl, "pltpu": pltpu, "jnp": jnp})
    m, k, n = table.kernel_shape(row)
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, (row.m, row.k)).astype(row.dtype)
    b = rng.integers(-3, 4, (row.k, row.n)).astype(row.dtype)
    body = matmul_v5_kernel if row.kernel == "v5" else matmul_v3_block_kernel
    out_dtype = v5_out_dtype(jnp.dtype(row.dtype)) if row.kernel == "v5" else jnp.dtype(row.dtype)
    c = pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct((m, n), out_dtype), interpret=True, **arguments)(
        jnp.pad(a, ((0, m - row.m), (0, k - row.k))), jnp.pad(b, ((0, k - row.k), (0, n - row.n))))
    exact = a.astype(np.int64) @ b.astype(np.int64)  # small whole numbers: exact in float32 too
    expected = np.asarray(jnp.asarray(exact.astype(np.float32)).astype(out_dtype)).astype(np.int64)
    np.testing.assert_array_equal(np.asarray(c[:row.m, :row.n]).astype(np.int64), expected)


def test_the_first_line_is_one_configuration_and_the_code_that_uses_it(user_folder):
    with stand_in(user_folder):
        code, out, err = call(["8192x4096x14336", "--target", "v6e"])
    assert code == 0, err
    lines = out.splitlines()
    assert re.match(r"Use (blocks \(bm, bk, bn\) = \([0-9]+,[0-9]+,[0-9]+\)|XLA) for 8192x4096x14336 "
                    r"bfloat16 on v6e: [0-9.]+ ms x/[0-9.]+ \(80 %\) device time, "
                    r"(compute|bandwidth|overhead)-bound, [0-9]+ % of (peak FLOP/s|HBM bandwidth)",
                    lines[0]), lines[0]
    code_lines = [x for x in lines[1:] if x.startswith("    ")]
    assert code_lines and lines[len(code_lines) + 1].startswith("Tie set")
    assert [x.split(":")[0] for x in lines[len(code_lines) + 1:len(code_lines) + 4]] == \
        ["Tie set (within its 80 % band, x/1.15, the model cannot rank them)", "Why", "Tie-break"] \
        or lines[len(code_lines) + 1].startswith("Tie set: none")


def test_a_decode_shape_is_reported_against_the_hbm_bandwidth(user_folder):
    """16 tokens through a 4096x14336 projection: reading the weights once is the time; every row
    with a time says bandwidth-bound and its share of the HBM bandwidth, never a FLOP/s share."""
    import io

    import pandas as pd

    with stand_in(user_folder):
        code, out, err = call(["16x4096x14336", "--target", "v5e", "--csv"])
    assert code == 0, err
    df = pd.read_csv(io.StringIO(out))
    timed = df[df.model_device_ms.notna()]
    assert len(timed) and (timed.bound == "bandwidth").all()
    weights_ms = 4096 * 14336 * 2 / 819e9 * 1e3
    assert (timed.model_device_ms >= weights_ms).all()
    with stand_in(user_folder):
        _, text, _ = call(["16x4096x14336", "--target", "v5e"])
    assert "bandwidth-bound" in text.splitlines()[0] and "% of HBM bandwidth" in text.splitlines()[0]


def test_twins_of_the_same_modelled_time_are_one_row_and_the_tie_break_is_stated(user_folder):
    with stand_in(user_folder):
        code, out, _ = call(["4096x4096x4096", "--target", "v5e", "--csv"])
        _, text, _ = call(["4096x4096x4096", "--target", "v5e"])
    import io

    import pandas as pd

    df = pd.read_csv(io.StringIO(out), keep_default_na=False)
    twins = df[df.same_time_as != ""]
    assert len(twins), "a square problem has blocks and their transposes at one modelled time"
    labels = df.apply(lambda x: f"({x.bm},{x.bk},{x.bn})", axis=1)
    for r in twins.itertuples():
        first = df[(df.same_time_as == "") & (df["rank"] != "") & (labels == r.same_time_as)].iloc[0]
        assert float(first.model_device_ms) == pytest.approx(float(r.model_device_ms), rel=1e-9)
        assert int(first["rank"]) < int(r.rank)
        assert f"({r.bm},{r.bk},{r.bn})" not in [x.split()[1] for x in text.splitlines()
                                                 if re.match(r"\s+[0-9]+  \(", x)]
    assert f"Tie-break: {table.TIE_BREAK}." in text


def test_a_long_call_says_what_it_does_and_the_budget_ends_it(user_folder, monkeypatch):
    """Compiles of a quarter second, a budget of 3 s: progress lines from 2 s on (the target, the
    shape, what is done, the budget left), an answer soon after the budget with what was compiled, and
    the rest said not compiled."""
    monkeypatch.setattr(StandInCompiler, "delay_s", 0.25)
    start = time.monotonic()
    with stand_in(user_folder):
        code, out, err = call(["8192x8192x8192", "--target", "v5e", "--time-budget", "3", "--workers", "1"])
    took = time.monotonic() - start
    assert code == 0, err
    progress = err.strip().splitlines()
    assert progress and all(PROGRESS.match(x) for x in progress), err
    assert any("v5e 8192x8192x8192 bfloat16: " in x and "candidate blocks" in x and "configurations done" in x
               and "time budget:" in x for x in progress), err
    assert ": done: 1 search;" in progress[-1], progress
    said = [x for x in out.splitlines() if "the time budget ran out" in x]
    assert len(said) == 2 and said[0].startswith("Use ") and re.match(
        r"[0-9]+ more candidates? not compiled: the time budget ran out \(--time-budget", said[1]), said
    assert took < 3 + 6, took  # the budget, the modelling after it, a busy machine


def test_a_call_within_two_seconds_prints_no_progress(user_folder):
    with stand_in(user_folder):
        code, out, err = call(["128x128x128", "--target", "v5e"])
    assert code == 0 and err == "", err


@pytest.mark.parametrize("given, folder_has_results, expect", [
    (None, True, "results"), (None, False, None), ("none", True, None), ("elsewhere", False, "elsewhere")])
def test_results_is_the_current_folder_s_or_none(tmp_path, monkeypatch, given, folder_has_results, expect):
    monkeypatch.chdir(tmp_path)
    if folder_has_results:
        (tmp_path / "results").mkdir()
    path, why = cli.results_of(given)
    assert path == (None if expect is None else Path(expect))
    assert bool(why) == (expect is None)
    assert ROOT / "results" != (path and path.resolve())


def test_the_header_says_the_model_is_the_advisor_s_own_where_no_results_is_here(tmp_path, monkeypatch):
    monkeypatch.setattr(advisor_model, "cached", lambda versions: (MODEL, None))
    with stand_in(tmp_path):
        code, out, err = call(["1024x1024x1024", "--target", "v5e"])
    assert code == 0, err
    assert "no ./results in the current folder; --results DIR names a run's" in out


def test_a_cache_that_cannot_keep_the_model_costs_a_warning_not_the_answer(tmp_path, monkeypatch, caplog):
    from tpu_matmul_repro.experiments.core import atomic_write

    def full(text, path, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setenv("TPU_MATMUL_REPRO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(advisor_model, "fitted", lambda config: MODEL)
    monkeypatch.setattr(atomic_write, "write_text_atomic", full)
    with caplog.at_level(logging.WARNING):
        model = advisor_model.load({}, None, {"libtpu_version": "x"})
    assert model.constants == MODEL.constants
    (warning,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    said = warning.getMessage()
    assert "could not keep the fitted model" in said and "No space left" in said


def test_ctrl_c_in_process_is_one_line_and_exit_130(user_folder, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(search, "search", interrupted)
    with stand_in(user_folder):
        code, out, err = call(["1024x1024x1024"])
    assert code == 130 and out == ""
    assert err.strip().splitlines() == ["advise: interrupted (Ctrl-C); its compile workers are stopped, the "
                                        "compile cache keeps what finished"]


# A compile worker that never answers: the hung compile of a real one, without jax.
HUNG_WORKER = "#!/bin/sh\nexec sleep 600\n"
# (lines joined, not one string literal: code_inputs reads import lines without parsing strings)
DRIVER = "\n".join([
    "import signal, sys",
    "signal.signal(signal.SIGINT, signal.default_int_handler)  # a terminal's, not a background job's",
    "signal.signal(signal.SIGHUP, signal.SIG_DFL)  # a terminal's, not nohup's (an ignored one stays so)",
    "from tpu_matmul_repro.advise import cli",
    "cli.compiler_for = lambda target, config: dict(toolchain='hung', static_profile=True, "
    "python={worker!r}, versions=None)",
    "sys.exit(cli.main({argv!r}))", ""])
STAND_IN_DRIVER = "\n".join([
    "import sys",
    "from advise_fakes import StandInCompiler",
    "from tpu_matmul_repro.advise import cli, workers",
    "workers.Compiler = StandInCompiler",
    "cli.compiler_for = lambda target, config: dict(toolchain='current', static_profile=True, versions=None)",
    "sys.exit(cli.main({argv!r}))", ""])


def children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(x) for x in (task / "children").read_text().split()}
        except OSError:
            pass
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("sig, whole_group, code, says", [
    (signal.SIGTERM, False, 128 + signal.SIGTERM, "advise: stopped by SIGTERM; "),
    (signal.SIGHUP, False, 128 + signal.SIGHUP, "advise: stopped by SIGHUP; "),
    (signal.SIGINT, True, 130, "advise: interrupted (Ctrl-C); "),  # a terminal signals the whole group
])
def test_a_stopped_advisor_leaves_no_worker(user_folder, tmp_path, sig, whole_group, code, says):
    """Stopped in the middle of a compile (a worker that never answers), the advisor ends at once, in one
    line, and its worker ends with it (Python's default SIGTERM left it running)."""
    worker = tmp_path / "hung-python"
    worker.write_text(HUNG_WORKER)
    worker.chmod(0o755)
    driver = DRIVER.format(worker=str(worker), argv=["1024x1024x1024", "--target", "v5e"])
    env = dict(os.environ, TPU_MATMUL_REPRO_CACHE="off")
    proc = subprocess.Popen([sys.executable, "-c", driver], cwd=user_folder, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    workers = set()
    try:
        deadline = time.monotonic() + 60
        while not (workers := children(proc.pid)) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert workers, proc.communicate(timeout=5)
        time.sleep(0.3)  # into the compile's wait
        (os.killpg if whole_group else os.kill)(proc.pid, sig)
        out, err = proc.communicate(timeout=30)
        ends = time.monotonic() + 5  # a loaded machine may take a moment to reap the worker
        while (left := [pid for pid in workers if alive(pid)]) and time.monotonic() < ends:
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in workers:  # what a failing advisor left, ended here
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert not left, "a compile worker outlived the advisor"
    assert proc.returncode == code, err
    lines = err.strip().splitlines()  # progress lines, if it took 2 s to start a worker, then one line
    assert lines[-1].startswith(says) and all(PROGRESS.match(x) for x in lines[:-1]), err


@pytest.mark.slow
def test_a_closed_stdout_ends_the_advisor_quietly(user_folder):
    """`advise ... --csv | head -0`: the reader is gone before the answer; no traceback, exit 141."""
    argv = ["2048x2048x2048", "--csv", "--results", str(user_folder / "results")]
    driver = STAND_IN_DRIVER.format(argv=argv)
    env = dict(os.environ, TPU_MATMUL_REPRO_CACHE="off")
    proc = subprocess.Popen([sys.executable, "-c", driver], cwd=TESTS, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    err = proc.stderr.read()
    proc.wait(timeout=120)
    assert proc.returncode in (0, 141), err
    assert all(PROGRESS.match(line) for line in err.splitlines()), err  # progress only, no traceback
