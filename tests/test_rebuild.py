"""Rebuild rules: a finished run reruns exactly what a code or config edit changes, and nothing when the
checkout moves. One small real run of a copy of the repository (the session's tiny run, conftest.py),
then dry runs and refused runs against a copy of it each."""
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from runs import TINY_RUN, copy_repository, copy_run, planned, snakemake
from syntax_trees import syntax_tree

from tpu_matmul_repro.experiments.core.code_inputs import closure

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def finished_run(tiny_run, tmp_path):
    """This test's copy of the session's finished tiny run (conftest.py), for it to edit and rerun."""
    return copy_run(tiny_run, tmp_path / "repo")


TABLE_ONWARDS = {"aggregate", "public_scores", "summaries", "claims", "then_and_now", "then_and_now_claims",
                 "figures", "gallery", "report"}
STUDY_ONWARDS = {"compile_study_job", "compile_study_target", *TABLE_ONWARDS}


@pytest.mark.slow
@pytest.mark.parametrize("module, reruns", [
    ("experiments/correctness/interpret.py", {"correctness_kernel", "correctness_table", "report"}),
    ("experiments/compile_study/study.py", STUDY_ONWARDS),
    ("experiments/compile_study/compile_worker.py", STUDY_ONWARDS),
    ("analysis/aggregate.py", TABLE_ONWARDS),
    ("analysis/summaries.py", TABLE_ONWARDS),  # the aggregate's timing model imports it
    ("figures/plots.py", {"figures", "gallery", "report"}),
    ("report/findings.py", {"gallery", "report"}),
    ("report/templates/report.html.j2", {"report"}),
    # a study is loaded by name, not imported: its code still belongs to the stages it adds to
    ("studies/then_and_now/specs.py", {"figures", "gallery", "report"}),
    ("studies/then_and_now/figure.py", {"figures", "gallery", "report"}),
    ("studies/then_and_now/section.py", {"report"}),
    ("studies/then_and_now/analysis.py",
     {"then_and_now", "then_and_now_claims", "figures", "gallery", "report"}),
    ("studies/then_and_now/templates/then_and_now.html.j2", {"report"}),
])
def test_a_code_edit_reruns_its_stage_and_what_follows(finished_run, module, reruns):
    path = finished_run / module
    original = path.read_bytes()
    path.write_bytes(original + b"\n# edited\n")  # this test's own copy of the run
    assert set(planned(finished_run)) - {"all"} == reruns
    if module == UNDONE:  # one edit undone is enough to show it (each dry run is a Snakemake start)
        path.write_bytes(original)
        assert planned(finished_run) == {}


# The code digest is of the content: an edit and its undoing leave the run up to date, however the
# file's time changed.
UNDONE = "analysis/aggregate.py"


@pytest.mark.slow
def test_a_config_edit_reruns_exactly_its_jobs(finished_run):
    tiny = finished_run / "config" / "tiny.yaml"
    original = tiny.read_text()
    edited = yaml.safe_load(original)
    edited["compile_study"]["experiments"]["v3"]["blocks"] = [[128, 128, 128]]
    try:
        tiny.write_text(yaml.safe_dump(edited))
        jobs = planned(finished_run)
        assert jobs["compile_study_job"] == 1, jobs  # v3's job only: v1's settings did not change
        assert "correctness_kernel" not in jobs, jobs
        edited["compile_study"]["profile_max_steps"] = 8  # a setting of every compile job
        tiny.write_text(yaml.safe_dump(edited))
        assert planned(finished_run)["compile_study_job"] == 2
    finally:
        tiny.write_text(original)
    assert planned(finished_run) == {}


@pytest.mark.slow
def test_a_moved_checkout_reruns_nothing(tiny_run, tmp_path):
    moved = copy_run(tiny_run, tmp_path / "elsewhere" / "renamed")  # results/ and .snakemake/, times kept
    assert planned(moved) == {}


def test_code_closure_follows_imports_and_the_kernel_registry():
    files = {p.relative_to(ROOT).as_posix() for p in closure("scripts/compile_study_job.py")}
    # the worker runs as `python -m`: its import in tpu_compile puts it in the closure
    assert {"experiments/compile_study/compile_worker.py", "experiments/compile_study/study.py",
            "experiments/core/schema.py"} <= files
    # the registry imports every kernel module at run time
    assert {p.relative_to(ROOT).as_posix() for p in (ROOT / "kernels").glob("*.py")} <= files
    assert not any(f.startswith(("figures/", "report/")) for f in files)


def test_reading_only_the_import_lines_finds_every_import_of_every_module():
    """code_inputs parses a file's import statements alone (every Snakemake start reads the closure of
    every rule): for each Python file of the repository, the same imports as parsing the whole file,
    and for the shapes an import takes (parenthesised, continued, in a function, after `if`)."""
    import ast

    from tpu_matmul_repro.experiments.core.code_inputs import _import_statements

    def imports(source):
        tree = ast.parse(source) if isinstance(source, str) else source
        return ({a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
                | {(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                   for a in n.names})

    shapes = ('from a import (\n    b,\n    c,\n)\nimport d, \\\n    e\ndef f():\n    import g\n'
              'if x:\n    from h import i  # why\n"""\nfrom the docstring\'s prose\n"""\n')
    assert imports(_import_statements(shapes)) == imports(shapes) != set()
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    assert len(files) > 100
    for name in files:
        source = (ROOT / name).read_text()
        assert imports(_import_statements(source)) == imports(syntax_tree(ROOT / name)), name


def finished_outputs(repo: Path) -> dict[str, bytes]:
    """The table, every figure and the reports of a finished run, by path."""
    paths = [repo / "results" / "matmul.parquet", *sorted((repo / "results" / "figures").iterdir()),
             *sorted((repo / "results" / "report").glob("report.*"))]
    return {str(p.relative_to(repo)): p.read_bytes() for p in paths if p.is_file()}


@pytest.mark.slow
def test_refused_input_leaves_every_output_of_the_previous_run_byte_identical(finished_run):
    """issue 29: each case stops in the gate (parse time, or a check job the aggregate waits for), so
    no job that would overwrite the table, a figure or a report starts. One case of each kind through
    Snakemake (a bad value in one file, a row given in two files, a config value the schema refuses, a
    NaN); tests/test_carried.py, test_config.py and test_fuzz.py check every message in process."""
    from test_carried import measured_rows

    before = finished_outputs(finished_run)
    assert len(before) > 10
    carried = finished_run / "data" / "measured"
    carried.mkdir(parents=True, exist_ok=True)
    good = measured_rows().assign(target="cpu", device_kind="cpu")
    negative = good.copy()
    negative["device_samples_s"] = negative["device_samples_s"].astype(object)
    negative.at[1, "device_samples_s"] = [-1e-4] * 5
    v5e = measured_rows()  # issue 39: faster than the chip, ok beyond the tolerance, unknown names
    fast, wrong = v5e.copy(), v5e.copy()
    fast["device_samples_s"] = fast["device_samples_s"].astype(object)
    fast.at[2, "device_samples_s"] = [1e-9] * 5
    wrong.at[0, "max_tile_error"] = 100.0
    bad_samples = measured_rows().assign(target="cpu", device_kind="cpu")
    bad_samples.at[1, "samples_s"] = [-1.0] * 5
    files = [  # (file name -> rows, what the refusal says)
        ({"laptop.parquet": bad_samples},
         "laptop.parquet: column 'samples_s', row 1: -1.0 is not a positive, finite number"),
        ({"laptop.parquet": negative}, "laptop.parquet: column 'device_samples_s', row 1: -0.0001 is not"),
        ({"a.parquet": good, "b.parquet": good},
         "b.parquet: column 'run_label', row 0: the same configuration and run label as row 0 of"),
        ({"vm.parquet": fast}, "vm.parquet: column 'device_samples_s', row 2: 1e-09 s is faster than"),
        ({"vm.parquet": wrong}, "vm.parquet: column 'max_tile_error', row 0: 100 in an ok row, over "
                                "measure.tolerance.bfloat16=0.02"),
        ({"vm.parquet": v5e.assign(target="v9")}, "vm.parquet: column 'target', row 0: 'v9' is not a target"),
        ({"vm.parquet": v5e.assign(git_sha="</td><script>alert(3)</script>")},
         "vm.parquet: column 'git_sha', row 0: '</td><script>alert(3)</script>' is not a commit"),
    ]
    configs = [  # (--config, merged into the tiny config: what the refusal says)
        (["measure={tolerance: {float32: .nan}}"], "measure.tolerance.float32: nan is not a finite number"),
        (["compile_study={sizes: [512.0]}"], "compile_study.sizes[0]: 512.0 is not of type 'integer'"),
    ]
    try:
        for written, message in files:
            for name, rows in written.items():
                rows.to_parquet(carried / name, index=False)
            result = snakemake(finished_run, "--cores", "1")
            assert result.returncode != 0 and message in result.stderr, result.stderr[-3000:]
            assert "Traceback" not in result.stderr
            assert finished_outputs(finished_run) == before, message
            for name in written:
                (carried / name).unlink()
        for extra, message in configs:
            result = snakemake(finished_run, "--cores", "1", "--config", *extra)
            assert result.returncode != 0 and message in result.stdout + result.stderr, result.stderr[-3000:]
            assert finished_outputs(finished_run) == before, message
    finally:
        for written, _ in files:
            for name in written:
                (carried / name).unlink(missing_ok=True)
    assert planned(finished_run) == {}


@pytest.mark.slow
def test_ctrl_c_says_once_that_the_run_was_interrupted_and_how_to_resume(tmp_path):
    """issue 29: a Ctrl-C printed a KeyboardInterrupt traceback per running job.

    One job at a time, interrupted while it runs the project's code (its log has its first line; no
    compile cache, so the compile lasts seconds): a job that Snakemake is just starting runs
    Snakemake's own generated preamble first, which still prints Python's traceback when interrupted
    (docs/reliability.md)."""
    import os
    import signal
    import time

    repo = copy_repository(tmp_path / "repo")
    args = ["--cores", "1", *TINY_RUN]
    # SIGINT's default handler, as in a terminal (a shell's background job starts with it ignored)
    start = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
             f"sys.argv = ['snakemake', *{args!r}]; runpy.run_module('snakemake', run_name='__main__')")
    env = dict(os.environ, TPU_MATMUL_REPRO_CACHE="off")
    proc = subprocess.Popen([sys.executable, "-c", start], cwd=repo, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, env=env)
    try:
        deadline = time.monotonic() + 300
        while not any("configurations" in p.read_text() for p in repo.glob("logs/estimates/*/*.log")):
            assert proc.poll() is None and time.monotonic() < deadline, "no compile job started"
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole process group
        output, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0
    assert output.count("Interrupted: the jobs that finished are kept; run the same command again to "
                        "resume.") == 1, output[-3000:]
    assert "KeyboardInterrupt" not in output and "Traceback (most recent call last)" not in output, output
    assert list(repo.glob("logs/estimates/*/*.log"))[0].read_text().rstrip().endswith("ERROR interrupted")


def test_the_compile_cache_keys_on_the_code_not_its_layout(tmp_path):
    from tpu_matmul_repro.experiments.core.code_inputs import digest

    module = tmp_path / "kernel.py"
    module.write_text("def f(a, b):\n    return a @ b\n")
    before = digest([module], tmp_path, semantic=True)
    module.write_text('"""A module."""\n# a comment\ndef f(a,\n      b):  # wrapped\n    """Its product."""\n'
                      "    return a @ b\n")
    assert digest([module], tmp_path, semantic=True) == before  # layout and words: the same compile
    module.write_text("def f(a, b):\n    return b @ a\n")
    assert digest([module], tmp_path, semantic=True) != before  # code: another compile
