"""Messages a user can act on, one line each, no traceback (issue 29): a full disk, a Ctrl-C, and
`snakemake measure` where nothing is measured."""
import errno
import subprocess
import sys
from pathlib import Path

import pytest

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
