"""benchmarks/default_run.py's arithmetic and report (the runs themselves take half an hour)."""
import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _script(name: str):
    """A script of benchmarks/ (a folder of scripts, not a package), loaded by its path."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_script("cpu_busy")  # what default_run imports from its own folder
default_run = _script("default_run")

ROWS = [("cold, --cores 1", 450.0, 36, 1.04, (5.5, 5.6)), ("cold, --cores 2", 260.0, 36, 1.91, (5.4, None)),
        ("cold, --cores 2", 240.0, 36, 1.93, None), ("cold, --cores 1", 470.0, 36, 1.05, None),
        ("no-op", 4.0, 0, 0.8, None)]


def test_the_speed_up_is_the_ratio_of_the_mean_times():
    assert default_run.speed_up(ROWS, [1, 2, 2, 1]) == ((1, 460.0), (2, 250.0))
    assert default_run.speed_up(ROWS[:1], [1, 2]) is None  # no --cores 2 run yet


def test_minutes_round_before_splitting():
    assert default_run.minutes(299.8) == "5 min 0 s"
    assert default_run.minutes(59.94) == "59.9 s"


def test_the_report_has_cpus_busy_and_speed_up(tmp_path):
    out = tmp_path / "run.md"
    default_run.write_report(out, "abc1234", ROWS, {"1 (run 1)": {"figures": (49.0, 1, 49.0)}}, [1, 2, 2, 1])
    text = out.read_text()
    assert "| cold, --cores 2 | 4 min 20 s (260 s) | 36 | 1.91 | 5.40 s, failed |" in text
    assert "Speed-up of --cores 2 over --cores 1: 1.84 (mean cold times 460 s and 250 s)." in text
    assert "| figures | 1 | 49 s | 49 s |" in text


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="the benchmark reads /proc/stat (Linux)")
def test_cpu_times_count_busy_within_total():
    busy, total = default_run.cpu_times()
    assert 0 < busy < total
