"""Safe writes and per-job progress."""
import itertools
import logging
import subprocess

import pandas as pd
import pytest

from tpu_matmul_repro.experiments.core.atomic_write import write_atomic, write_parquet_atomic
from tpu_matmul_repro.experiments.core.runtime import Progress, duration


def test_a_failed_write_leaves_the_previous_file_and_no_partial_one(tmp_path):
    path = tmp_path / "table.parquet"
    write_parquet_atomic(pd.DataFrame({"x": [1, 2]}), path)

    def crash_midway(tmp):
        with open(tmp, "wb") as f:
            f.write(b"PAR1 half a table")
        raise RuntimeError("killed midway")

    with pytest.raises(RuntimeError, match="killed midway"):
        write_atomic(path, crash_midway)
    assert pd.read_parquet(path).x.tolist() == [1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.parquet"]


def test_progress_reports_count_and_time_left(caplog):
    ticks = itertools.count(0, 10)  # 10 s per step
    progress = Progress(4, logging.getLogger("test"), clock=lambda: float(next(ticks)))
    with caplog.at_level(logging.INFO):
        first = progress.step("v5 bfloat16 2048x2048x2048: ok")
        progress.step("b")
        progress.step("c")
        last = progress.step("d")
    assert first == "1/4 (25 %) v5 bfloat16 2048x2048x2048: ok; 10 s elapsed, about 30 s left"
    assert last == "4/4 (100 %) d; 40 s elapsed, about 0 s left"
    assert len(caplog.records) == 4


def test_durations_read_naturally():
    assert [duration(s) for s in (4.4, 65, 3725)] == ["4 s", "1 min 5 s", "1 h 2 min"]


def test_the_report_date_is_reproducible(monkeypatch):
    """SOURCE_DATE_EPOCH when set, else the commit's time: never the clock of the day of the build."""
    import datetime

    from tpu_matmul_repro.experiments.core.provenance import build_date

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert build_date() == datetime.date(2023, 11, 14)
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    commit_time = subprocess.run(["git", "log", "-1", "--format=%ct"], capture_output=True, text=True).stdout
    if commit_time.strip():  # a git checkout: the commit's date (UTC)
        assert build_date() == datetime.datetime.fromtimestamp(int(commit_time), datetime.UTC).date()


def test_the_job_log_keeps_what_worker_processes_append(tmp_path):
    """A compile worker appends its stderr to the job's log while the job logs to it: neither may
    overwrite the other (the log was once opened at its own offset, and the job's lines overwrote the
    worker's)."""
    import subprocess
    import sys

    from tpu_matmul_repro.experiments.core.runtime import logged

    path = tmp_path / "job.log"
    path.write_text("a previous run's log\n")
    with logged(path) as log:
        log.info("before the worker")
        with open(path, "a") as worker_stderr:
            subprocess.run([sys.executable, "-c", "import sys; sys.stderr.write('worker says hi\\n')"],
                           stderr=worker_stderr, check=True)
        log.info("after the worker")
    lines = path.read_text().splitlines()
    assert "a previous run's log" not in lines
    assert [line.split(" INFO ")[-1] if " INFO " in line else line for line in lines] == [
        "before the worker", "worker says hi", "after the worker"]


def test_the_job_log_leaves_out_font_subsetting_chatter(tmp_path):
    """Saving a PDF subsets its fonts with fontTools, which logs ~150 INFO lines per font (a figure job's
    log was mostly that), and WeasyPrint logs each step of a PDF. Their warnings still reach the log;
    the job's own INFO lines too."""
    import logging

    from tpu_matmul_repro.experiments.core.runtime import logged

    path = tmp_path / "job.log"
    with logged(path) as log:
        logging.getLogger("fontTools.subset").info("Glyph IDs: [0, 1, 2]")
        logging.getLogger("weasyprint.progress").info("Step 6 - Creating PDF")
        logging.getLogger("fontTools.subset").warning("a real problem")
        log.info("wrote the figure")
    text = path.read_text()
    assert "Glyph IDs" not in text and "Step 6" not in text
    assert "a real problem" in text and "wrote the figure" in text
