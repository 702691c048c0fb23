"""Messages a user can act on, one line each, no traceback (issue 29): a full disk, a Ctrl-C, and
`snakemake measure` where nothing is measured."""
import errno
import subprocess
import sys
from pathlib import Path

import pytest
from syntax_trees import syntax_tree

from tpu_matmul_repro.experiments.core.runtime import logged
from tpu_matmul_repro.experiments.measure.device import measured_or_error

ROOT = Path(__file__).resolve().parent.parent


def test_measure_with_the_device_off_says_it_is_off_not_that_no_tpu_was_found():
    with pytest.raises(ValueError) as e:
        measured_or_error([], "off")
    assert "measure.device is off" in str(e.value) and "no TPU found" not in str(e.value)
    with pytest.raises(ValueError, match="no TPU found here"):
        measured_or_error([], "auto")


@pytest.mark.parametrize("error", [
    OSError(errno.ENOSPC, "No space left on device", "results/matmul.parquet"),
    OSError("Error writing bytes to file. Detail: [errno 28] No space left on device"),  # pyarrow's
])
def test_a_full_disk_is_one_line_in_the_job_log(tmp_path, error):
    log = tmp_path / "job.log"
    with pytest.raises(SystemExit) as e, logged(log):
        raise error
    assert e.value.code == 1
    lines = log.read_text().splitlines()
    assert len(lines) == 1 and "ERROR no space left on the device" in lines[0], lines
    assert "run the same command again" in lines[0]
    if error.filename:
        assert "writing results/matmul.parquet" in lines[0]


def test_other_os_errors_keep_their_traceback(tmp_path):
    log = tmp_path / "job.log"
    with pytest.raises(PermissionError), logged(log):
        raise PermissionError(errno.EACCES, "Permission denied", "x")
    assert "Traceback" in log.read_text()


def test_an_interrupted_job_says_so_in_its_log_without_a_traceback(tmp_path):
    log = tmp_path / "job.log"
    try:
        with logged(log):
            raise KeyboardInterrupt
    except BaseException as e:  # noqa: B036  (a KeyboardInterrupt escaping would end the test session)
        caught = e
    assert isinstance(caught, SystemExit) and caught.code == 130, repr(caught)
    assert log.read_text().strip().endswith("ERROR interrupted") and "Traceback" not in log.read_text()


def test_a_script_interrupted_outside_its_log_exits_quietly():
    """Ctrl-C reaches every job's process: one interrupted while importing printed a traceback each."""
    code = "import _job; raise KeyboardInterrupt"  # found as Snakemake finds it: in the script's folder
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "scripts", capture_output=True,
                            text=True)
    assert result.returncode == 130 and result.stderr == ""


# issue 39: nothing earlier lost on a failed write; SOURCE_DATE_EPOCH checked before any job

@pytest.mark.parametrize("error", [
    OSError(errno.ENOSPC, "No space left on device"),  # the OS's, without the file
    OSError("Error writing bytes to file. Detail: [errno 28] No space left on device"),  # pyarrow's
])
def test_a_full_disk_keeps_the_previous_file_and_names_it(tmp_path, error):
    """With 48 KiB free the message said "no space left" but not where; the write's temporary file was
    removed, the previous file stays, and the job's one line names the output."""
    from tpu_matmul_repro.experiments.core.atomic_write import write_atomic

    path = tmp_path / "results" / "matmul.parquet"
    path.parent.mkdir()
    path.write_bytes(b"the previous table")

    def fill_the_disk(tmp):
        Path(tmp).write_bytes(b"half a tab")
        raise error

    log = tmp_path / "job.log"
    with pytest.raises(SystemExit), logged(log):
        write_atomic(path, fill_the_disk)
    assert path.read_bytes() == b"the previous table"
    assert [p.name for p in path.parent.iterdir()] == ["matmul.parquet"]  # no temporary file left
    lines = log.read_text().splitlines()
    assert len(lines) == 1 and f"no space left on the device writing {path}:" in lines[0], lines


def test_every_writer_of_results_writes_through_the_atomic_helper():
    """A table, figure, report or page written straight to its path is half a file after a crash, and
    an exception midway leaves nothing of the previous one. Every call that writes a file in the
    project's code is the function write_atomic calls (a lambda passed to it), or writes elsewhere
    than results/ (the caches, logs, a worker's pipe: listed)."""
    import ast

    writers = {"to_parquet", "to_csv", "savefig", "write_text", "write_bytes", "write_pdf", "copyfile"}
    elsewhere = {  # (file, writer): what it writes
        ("experiments/core/output_cache.py", "copyfile"): "the output cache's own entry",
        ("experiments/core/output_cache.py", "write_text"): "the output cache's manifest",
        ("advise/cli.py", "to_csv"): "the advice table to stdout",
        ("benchmarks/default_run.py", "write_text"): "a benchmark's record in benchmarks/",
        ("benchmarks/carried_rows.py", "write_text"): "a benchmark's record in benchmarks/",
        ("benchmarks/synthetic_measured.py", "to_parquet"): "a synthetic file for a benchmark",
        ("figures/layout.py", "savefig"): "an in-memory PNG the layout check measures (no file)",
    }
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    unsafe = []
    for name in files:
        if name.startswith(("tests/", "tools/")):
            continue
        tree = syntax_tree(ROOT / name)
        inside_helper = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "write_atomic":
                for arg in node.args[1:]:
                    inside_helper.update(id(n) for n in ast.walk(arg))
        for node in ast.walk(tree):
            called = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr
            helper = name == "experiments/core/atomic_write.py"
            if called in writers and id(node) not in inside_helper and not helper:
                if (name, called) not in elsewhere:
                    unsafe.append(f"{name}:{node.lineno} {called}")
    assert not unsafe, unsafe


@pytest.mark.parametrize("value", ["abc", "99999999999999", "²", "-5", "1.5", " 1", "1e9"])
def test_a_bad_source_date_epoch_is_refused_in_one_line(monkeypatch, value):
    """abc silently gave today's date; 99999999999999 raised ValueError (year 3170843 is out of range)
    late in both report jobs, after Snakemake had removed the four previous reports."""
    from tpu_matmul_repro.experiments.core.runtime import UserError, source_date_epoch

    monkeypatch.setenv("SOURCE_DATE_EPOCH", value)
    with pytest.raises(UserError, match=r"^SOURCE_DATE_EPOCH=.* is not a time: whole seconds since "
                                        r"1970-01-01 UTC, at most 253402300799") as e:
        source_date_epoch()
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("value, date", [("0", "1970-01-01"), ("1732665600", "2024-11-27"),
                                         ("253402300799", "9999-12-31")])
def test_a_valid_source_date_epoch_is_the_reports_date(monkeypatch, value, date):
    from tpu_matmul_repro.experiments.core.provenance import build_date

    monkeypatch.setenv("SOURCE_DATE_EPOCH", value)
    assert build_date().isoformat() == date
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "")  # empty: unset, as matplotlib reads it too
    from tpu_matmul_repro.experiments.core.runtime import source_date_epoch

    assert source_date_epoch() is None


def test_a_bad_source_date_epoch_stops_the_run_before_any_job(tmp_path):
    import os
    import shutil

    shutil.copytree(ROOT / "config", tmp_path / "config")
    earlier = tmp_path / "results" / "report" / "report.en.html"
    earlier.parent.mkdir(parents=True)
    earlier.write_text("the previous report")
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--cores", "1",
           "--configfile", "config/config.ci.yaml", "--replace-workflow-config"]
    result = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, SOURCE_DATE_EPOCH="99999999999999"))
    assert result.returncode != 0
    assert "SOURCE_DATE_EPOCH='99999999999999' is not a time" in result.stderr, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "ValueError" not in result.stderr
    assert earlier.read_text() == "the previous report"
    assert [p.name for p in (tmp_path / "results").rglob("*")] == ["report", "report.en.html"]


def test_the_previous_outputs_a_failed_run_removed_are_put_back_with_their_records(tmp_path, monkeypatch):
    """Snakemake removes a job's outputs when it starts it: kept as hard links (no space needed) with
    their metadata records, put back where the run left them missing, dropped after a success."""
    from tpu_matmul_repro.experiments.core.previous_outputs import PreviousOutputs

    monkeypatch.chdir(tmp_path)
    for name, text in (("results/matmul.parquet", "table"), ("results/figures/a.png", "figure")):
        Path(name).parent.mkdir(parents=True, exist_ok=True)
        Path(name).write_text(text)
    records, written = {"results/matmul.parquet": {"code": "abc"}}, {}
    kept = PreviousOutputs()
    assert kept.keep(["results/matmul.parquet", "results/figures/a.png", "results/missing.csv"],
                     read_record=records.get) == ["results/figures/a.png", "results/matmul.parquet"]
    Path("results/matmul.parquet").unlink()  # the failed job's, removed by Snakemake
    Path("results/figures/a.png").write_text("made again")  # a job that finished
    assert kept.restore(write_record=written.__setitem__) == ["results/matmul.parquet"]
    assert Path("results/matmul.parquet").read_text() == "table"
    assert Path("results/figures/a.png").read_text() == "made again"
    assert written == {"results/matmul.parquet": {"code": "abc"}}
    assert not kept.folder.exists()
    # a run killed outright (no onerror) leaves its links: the next run's start puts them back
    PreviousOutputs().keep(["results/matmul.parquet"])
    Path("results/matmul.parquet").unlink()
    again = PreviousOutputs()
    assert again.keep(["results/figures/a.png"]) == ["results/figures/a.png"]
    assert Path("results/matmul.parquet").read_text() == "table"
    again.discard()
    assert not again.folder.exists() and Path("results/figures/a.png").exists()
