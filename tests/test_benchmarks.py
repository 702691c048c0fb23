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

ROWS = [("cold, --cores 1", 450.0, 36, 1.04, 452.3, (5.5, 5.6), "post: built in 17 s", "0 of 33"),
        ("cold, --cores 2", 260.0, 36, 1.91, 470.0, (5.4, None), "post: reused", "0 of 33"),
        ("cold, --cores 2", 240.0, 36, 1.93, 468.0, None, "post: reused", "0 of 33"),
        ("cold, --cores 1", 470.0, 36, 1.05, 455.0, None, "post: reused", "0 of 33"),
        ("warm cache (results/ deleted), --cores 1", 30.0, 36, 1.0, 29.0, None, "post: reused", "33 of 33"),
        ("no-op", 4.0, 0, 0.8, 1.9, None, "", "")]


def test_the_speed_up_is_the_ratio_of_the_mean_times():
    assert default_run.speed_up(ROWS, [1, 2, 2, 1]) == ((1, 460.0), (2, 250.0))
    assert default_run.speed_up(ROWS[:1], [1, 2]) is None  # no --cores 2 run yet


def test_minutes_round_before_splitting():
    assert default_run.minutes(299.8) == "5 min 0 s"
    assert default_run.minutes(59.94) == "59.9 s"


def test_the_report_has_cpus_busy_and_speed_up(tmp_path):
    out = tmp_path / "run.md"
    stages = {"1 (run 1)": {"figures": (49.0, 1, 49.0)}, "1, warm cache": {"figures": (0.0, 1, 0.0)}}
    default_run.write_report(out, "abc1234", ROWS, stages, [1, 2, 2, 1])
    text = out.read_text()
    assert ("| cold, --cores 1 | 7 min 30 s (450 s) | 452 s | 36 | 1.04 | 5.50 s, 5.60 s "
            "| post: built in 17 s | 0 of 33 |") in text
    assert ("| cold, --cores 2 | 4 min 20 s (260 s) | 470 s | 36 | 1.91 | 5.40 s, failed "
            "| post: reused | 0 of 33 |") in text
    assert ("| warm cache (results/ deleted), --cores 1 | 30.0 s (30 s) | 29 s | 36 | 1.00 |  "
            "| post: reused | 33 of 33 |") in text
    assert "Run with --cores 1, warm cache, job wall time by rule" in text
    assert "Speed-up of --cores 2 over --cores 1: 1.84 (mean cold times 460 s and 250 s)." in text
    assert "| figures | 1 | 49 s | 49 s |" in text


def test_a_cold_run_says_whether_it_built_the_toolchain_environment(tmp_path):
    """From the toolchain_environment job's log line (toolchain_env.built_or_reused)."""
    from tpu_matmul_repro.experiments.compile_study.toolchain_env import BUILT, built_or_reused

    logs = tmp_path / "logs" / "toolchains"
    assert default_run.toolchain_environments(tmp_path) == ""
    (logs / "post").mkdir(parents=True)
    manifest = dict(toolchain="post", path="/c/post-1", build_s=17.2, built_at="2026-12-02T13:03:23+00:00")
    (logs / "post" / "environment.log").write_text(f"INFO {built_or_reused({**manifest, BUILT: True})}\n")
    (logs / "libtpu52").mkdir()
    (logs / "libtpu52" / "environment.log").write_text(
        f"INFO {built_or_reused({**manifest, 'toolchain': 'libtpu52', BUILT: False})}\n")
    assert default_run.toolchain_environments(tmp_path) == "libtpu52: reused, post: built in 17 s"


def test_the_output_cache_hits_are_counted_from_the_jobs_logs(tmp_path):
    """Each job that asks the output cache logs its key; those that got their outputs say so."""
    assert default_run.output_cache_hits(tmp_path) == ""
    (tmp_path / "logs" / "figures").mkdir(parents=True)
    (tmp_path / "logs" / "figures" / "figures.log").write_text(
        "INFO output cache key 0123: inputs=[ab]\n"
        "INFO outputs copied from the output cache (/c, entry 0123)\n")
    (tmp_path / "logs" / "aggregate.log").write_text(
        "INFO output cache key 4567: inputs=[cd]\n"
        "INFO outputs stored in the output cache (/c, entry 4567)\n")
    assert default_run.output_cache_hits(tmp_path) == "1 of 2"


def test_the_record_is_written_after_the_runs_not_between_them(tmp_path, monkeypatch):
    """Between the cold and the warm run the checkout the project is installed from must not change
    (its commit is in every row: a rewritten tracked file makes it "-dirty"); an interrupted
    benchmark still writes what it measured."""
    out = tmp_path / "record.md"

    def two_runs_then_interrupted(args, rows, stages):
        rows.append(ROWS[0])
        assert not out.exists()
        rows.append(ROWS[1])
        raise KeyboardInterrupt

    monkeypatch.setattr(default_run, "measure", two_runs_then_interrupted)
    monkeypatch.setattr(sys, "argv", ["default_run.py", "--out", str(out)])
    with pytest.raises(KeyboardInterrupt):
        default_run.main()
    assert "| cold, --cores 2 | 4 min 20 s (260 s)" in out.read_text()


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="the benchmark reads /proc/stat (Linux)")
def test_cpu_times_count_busy_within_total():
    busy, total = default_run.cpu_times()
    assert 0 < busy < total


advisor_speed = _script("advisor_speed")


def test_the_advisor_speed_benchmark_reads_the_compiles_from_the_advisor_s_log():
    log = ("2026-12-04 20:22:24,787 tpu_matmul_repro.advise.cli: advice 8192x4096x14336 on 7x: 3 of 85 "
           "compiles from the compile cache, 82 compiled here\n")
    assert advisor_speed.compiles("INFO other line\n" + log) == (82, 3)
    with pytest.raises(ValueError, match="found none"):
        advisor_speed.compiles("advise: --target 'v9': expected one of v5e, v5p, v6e, 7x\n")
    assert advisor_speed.compiles(log + log) == (164, 6)  # several shapes in one call: summed


def test_the_advisor_speed_table_judges_each_run_by_its_goal():
    import pandas as pd

    def row(target, run, wall_s, compiled, cached):
        return dict(target=target, run=run, wall_s=wall_s, cpu_s=100.0, compiled=compiled, cached=cached,
                    load=0.5)

    rows = pd.DataFrame([row("7x", "cold", 20.0, 82, 0), row("v5e", "cold", 20.1, 50, 0),
                         row("v6e", advisor_speed.MANY, 119.0, 200, 0), row("v6e", "warm", 2.1, 0, 21)])
    lines = advisor_speed.table(rows).splitlines()
    assert lines[2] == "| 7x | cold | 20.0 s | 100.0 s | 82 (0) | 0.50 | <= 20 s | yes |"  # the goal met
    assert lines[3] == "| v5e | cold | 20.1 s | 100.0 s | 50 (0) | 0.50 | <= 20 s | no |"
    assert lines[4] == "| v6e | cold, 21 shapes | 119.0 s | 100.0 s | 200 (0) | 0.50 | <= 120 s | yes |"
    assert lines[5] == "| v6e | warm | 2.1 s | 100.0 s | 0 (21) | 0.50 | <= 2 s | no |"


def test_the_advisor_speed_summary_takes_each_target_s_latest_commit():
    import pandas as pd

    def row(sha, target, run, wall_s):
        return dict(git_sha=sha, target=target, run=run, wall_s=wall_s, cpu_s=2 * wall_s)

    record = pd.DataFrame([row("aaaaaaa1", "7x", "cold", 120.0), row("bbbbbbb2", "7x", "cold", 21.0),
                           row("bbbbbbb2", "7x", "cold", 10.0), row("bbbbbbb2", "7x", "cold", 15.0),
                           row("aaaaaaa1", "v5e", "cold", 50.0)])
    lines = advisor_speed.summary(record).splitlines()
    assert lines[2] == "| 7x | cold | bbbbbbb | 3 | 15.0 s (10.0-21.0 s) | 30.0 s | <= 20 s | yes |"
    assert lines[3] == "| v5e | cold | aaaaaaa | 1 | 50.0 s (50.0-50.0 s) | 100.0 s | <= 20 s | no |"
