"""The Snakemake workflow end to end: the shared tiny run's outputs, surviving interruptions to the same
bytes on the tiny config and copying them back from the output cache; refusing bad configs and dry
runs with the cluster profiles on the CI-sized config."""
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import runs
import yaml
from runs import TINY_RUN

from tpu_matmul_repro.experiments.measure.device import CACHE_VARIABLE, Device

ROOT = Path(__file__).resolve().parent.parent
CI_RUN = ("--configfile", "config/config.ci.yaml", "--replace-workflow-config")


def snakemake(workdir: Path, *args: str, device: Device | None = None) -> subprocess.CompletedProcess:
    """Run Snakemake on this repository's Snakefile with `workdir` as its working directory.

    `device` pretends the run found that device (through the cache experiments/measure/device.py keeps in
    the environment); by default the run finds what this machine has: no TPU.
    """
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), *args]
    env = {k: v for k, v in os.environ.items() if k != CACHE_VARIABLE}
    if device:
        env[CACHE_VARIABLE] = device.to_json()
    return subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=900, env=env)


def make_workdir(path: Path) -> Path:
    shutil.copytree(ROOT / "config", path / "config")
    return path


@pytest.fixture
def workdir(tmp_path):
    return make_workdir(tmp_path)


@pytest.mark.slow
def test_lint_passes(workdir):
    result = snakemake(workdir, "--lint")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_the_tiny_run_makes_every_output(tiny_run):
    """The session's tiny run (tests/runs.py), as a user reads it: every stage's output, the carried
    measurement in the table and the report. .ci/run runs the CI-sized config end to end as well, with
    the post's toolchain and a measurement of this CPU."""
    results = tiny_run / "results"
    df = pd.read_parquet(results / "correctness.parquet")
    assert df.passed.all() and set(df.kernel) == {"v1", "v3"} and set(df["mode"]) == {"interpret"}
    table = pd.read_parquet(results / "matmul.parquet")
    estimates = table[table.source == "estimate"]
    assert set(estimates.target) == {"v5e"}  # the tiny config replaced, not merged into, the default
    assert set(estimates.experiment) == {"v1", "v3"} and (estimates.status == "ok").all()  # 512 fits VMEM
    assert (results / "estimates" / "v5e.parquet").exists()
    # one published point of the tiny config's kind: the timing model says it cannot be fitted, and why
    assert "not fitted: 1 points cannot fit" in (results / "fidelity.csv").read_text()
    claims = pd.read_csv(results / "claims.csv")
    assert len(claims) == 7 and set(claims.verdict) <= {"holds", "differs", "not tested"}
    measured = table[table.source == "measured"]  # carried in from data/measured/, not measured here
    assert set(measured.run_label) == {"tpu-vm"} and set(measured.status) == {"ok", "vmem_oom"}
    ok = measured[measured.status == "ok"]
    assert (ok.n_samples >= 5).all() and (ok.tflops > 0).all()
    assert not (results / "measured").exists()
    figures = results / "figures"
    for name in ("v1_float32_v5e", "vmem_v5e", "fidelity_v5e"):
        for suffix in (".png", ".svg", ".pdf", ".zh.png", ".zh.svg", ".zh.pdf"):
            assert (figures / f"{name}{suffix}").stat().st_size > 0
    for lang in ("en", "zh"):
        html = (results / "report" / f"report.{lang}.html").read_text()
        assert "v1" in html and "</html>" in html
        assert ("run tpu-vm" if lang == "en" else "运行 tpu-vm") in html  # the carried measurement's table
        assert (results / "report" / f"report.{lang}.pdf").read_bytes().startswith(b"%PDF")


def set_key(config: dict, dotted: str, value) -> dict:
    *parents, last = dotted.split(".")
    node = config
    for part in parents:
        node = node[part]
    node[last] = value
    return config


BAD_CONFIGS = [  # (key, bad value, what the error must say)
    ("compile_study.timeout_s", "fast", "compile_study.timeout_s: 'fast' is not of type 'number'"),
    ("compile_study.timeout_s", 0, "compile_study.timeout_s: 0 is less than or equal to the minimum of 0"),
    ("targets", ["v5e", "v9"], "targets[1]: 'v9' is not one of"),
    ("compile_study.experiments.v3.blocks", [[128, 100, 128]], "bk=100 does not divide k=1024"),
    ("compile_study.sizes", [1024, 0], "compile_study.sizes[1]: 0 is less than the minimum of 1"),
    ("correctness.kernels.v1.dtypes", ["float8"], "correctness.kernels.v1.dtypes[0]: 'float8' is not one of"),
    ("compile_study.experiments.v5.blocks", [],
     "compile_study.experiments.v5.blocks: [] should be non-empty"),
    ("compile_study.experiments", {}, "compile_study.experiments: {} should be non-empty"),
    ("measure.samples", 2, "measure.samples: 2 is less than the minimum of 5"),
    ("validation.public_measurements", 3, "validation.public_measurements: 3 is not of type 'boolean'"),
]


@pytest.mark.parametrize("key, value, message", BAD_CONFIGS, ids=[f"{k}={v}" for k, v, _ in BAD_CONFIGS])
def test_bad_config_is_refused_with_the_key_and_the_value(key, value, message):
    """What the Snakefile runs on a config before any job (rules/common.smk: checked, make_plan), in
    this process; test_bad_config_fails_before_any_job runs Snakemake on one case of each kind."""
    from tpu_matmul_repro.experiments.plan.config import ConfigError
    from tpu_matmul_repro.experiments.plan.plan import validate

    config = yaml.safe_load((ROOT / "config" / "config.ci.yaml").read_text())
    with pytest.raises(ConfigError) as refused:
        validate(set_key(config, key, value))
    assert message in str(refused.value)


# One case of each kind through Snakemake itself: a type the schema refuses, a semantic check (the plan
# refuses), an empty list.
END_TO_END_BAD_CONFIGS = [BAD_CONFIGS[0], BAD_CONFIGS[3], BAD_CONFIGS[6]]


@pytest.mark.slow
@pytest.mark.parametrize("key, value, message", END_TO_END_BAD_CONFIGS,
                         ids=[f"{k}={v}" for k, v, _ in END_TO_END_BAD_CONFIGS])
def test_bad_config_fails_before_any_job(workdir, key, value, message):
    config = yaml.safe_load((workdir / "config" / "config.ci.yaml").read_text())
    (workdir / "config" / "bad.yaml").write_text(yaml.safe_dump(set_key(config, key, value)))
    earlier = workdir / "results" / "matmul.parquet"  # a previous run's output must survive
    earlier.parent.mkdir()
    earlier.write_bytes(b"an earlier result")
    result = snakemake(workdir, "--cores", "1", "--configfile", "config/bad.yaml",
                       "--replace-workflow-config")
    assert result.returncode != 0
    assert message in result.stdout + result.stderr, result.stdout[-2000:] + result.stderr[-2000:]
    assert [p.name for p in (workdir / "results").rglob("*")] == ["matmul.parquet"]
    assert earlier.read_bytes() == b"an earlier result"


@pytest.mark.slow
def test_bad_command_line_override_fails_before_any_job(workdir):
    result = snakemake(workdir, "--cores", "1", *CI_RUN, "--config", "targets=[v9]")
    assert result.returncode != 0
    assert "targets[0]: 'v9' is not one of" in result.stdout + result.stderr
    assert not (workdir / "results").exists()


@pytest.mark.slow
def test_without_a_tpu_nothing_is_measured_and_the_log_says_so(workdir):
    config = yaml.safe_load((workdir / "config" / "config.ci.yaml").read_text())
    config["measure"] = {"device": "auto"}
    (workdir / "config" / "auto.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(workdir, "--dry-run", "--configfile", "config/auto.yaml", "--replace-workflow-config")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "No TPU found (measure.device=auto)" in result.stdout + result.stderr
    assert "measure_job" not in result.stdout


@pytest.mark.slow
def test_measure_with_the_device_off_says_so_in_one_line(workdir):
    """issue 29: `measure.device: off` said "no TPU found here", in an input function's traceback; a
    number given on the command line (`--config 'measure={samples: 6}'`) arrived as text and was refused."""
    override = "measure={device: off, samples: 6}"
    result = snakemake(workdir, "--dry-run", "measure", *CI_RUN, "--config", override)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "measure: measure.device is off, so there is nothing to measure; set it to auto" in output, output
    assert "measure.device=off: this run compiles and estimates" in output
    assert "no TPU found" not in output.lower() and "InputFunctionException" not in output
    assert "is not of type 'integer'" not in output  # 6 is read as the number it is


@pytest.mark.slow
def test_on_a_tpu_host_the_sweeps_are_measured_and_its_generation_joins_the_targets(workdir):
    config = yaml.safe_load((workdir / "config" / "config.ci.yaml").read_text())
    config["measure"] = {"device": "auto", "label": "vm1"}
    (workdir / "config" / "tpu.yaml").write_text(yaml.safe_dump(config))
    v6e = Device("v6e", "tpu", "TPU v6 lite", 4)
    args = ("--configfile", "config/tpu.yaml", "--replace-workflow-config")
    result = snakemake(workdir, "--dry-run", *args, device=v6e)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Measuring on v6e (TPU v6 lite, 4 chips) as results/measured/v6e-vm1.parquet" in result.stdout
    for experiment in ("v1_float32", "v3_float32", "v5_bfloat16", "xla_float32", "xla_bfloat16"):
        assert f"results/measured/v6e-vm1/{experiment}.parquet" in result.stdout  # every sweep measured
        estimated = "xla_all" if experiment.startswith("xla") else experiment  # one baseline job
        assert f"results/estimates/v6e/{estimated}.1of1.parquet" in result.stdout  # and estimated for v6e
    # Run for real on this CPU machine, a measuring job refuses to time the CPU as if it were the TPU.
    result = snakemake(workdir, "--cores", "1", *args, "results/measured/v6e-vm1/xla_float32.parquet",
                       device=v6e)
    assert result.returncode != 0
    log = (workdir / "logs" / "measured" / "v6e-vm1" / "xla_float32.log").read_text()
    assert "this job measures on tpu, but JAX's default device is cpu" in log
    assert not (workdir / "results" / "measured" / "v6e-vm1" / "xla_float32.parquet").exists()


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["slurm", "kubernetes"])
def test_cluster_profile_dry_run(workdir, profile):
    if importlib.util.find_spec(f"snakemake_executor_plugin_{profile}") is None:
        pytest.skip(f"the {profile} executor plugin is in requirements-cluster.txt, not installed here")
    result = snakemake(workdir, "--dry-run", "--profile", str(ROOT / "profiles" / profile), *CI_RUN)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert f"Using profiles {ROOT / 'profiles' / profile}" in result.stdout + result.stderr
    assert "compile_study_job" in result.stdout
    assert not (workdir / "results").exists()


def wait_for(path_glob: str, workdir: Path, proc: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not list(workdir.glob(path_glob)):
        assert proc.poll() is None, f"snakemake ended before {path_glob} appeared"
        assert time.monotonic() < deadline, f"{path_glob} did not appear"
        time.sleep(0.2)


def interrupt(repo: Path, after: str, sig: int, whole_group: bool) -> None:
    """Start the tiny run in `repo`, wait until a file matching `after` exists, then send `sig` and wait."""
    # Snakemake with SIGINT's default handler: a shell starts background commands with SIGINT ignored
    # (Python then keeps ignoring it), which would make the interruption a no-op under such a runner.
    args = ["--cores", "2", *TINY_RUN]
    start = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
             f"sys.argv = ['snakemake', *{args!r}]; runpy.run_module('snakemake', run_name='__main__')")
    proc = subprocess.Popen([sys.executable, "-c", start], cwd=repo, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(after, repo, proc)
        if whole_group:  # Ctrl-C in a terminal signals the whole foreground process group
            os.killpg(proc.pid, sig)
        else:  # `kill PID`, or a scheduler stopping the job
            proc.send_signal(sig)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0


def stable_columns(df: pd.DataFrame) -> pd.DataFrame:
    """Everything but wall-clock times, which no two runs share."""
    return df.drop(columns=[c for c in ("compile_s",) if c in df]).reset_index(drop=True)


def asked_and_copied(repo: Path) -> tuple[set, set]:
    """The logs of the jobs that looked their outputs up, and of those whose outputs were copied."""
    logs = {p: p.read_text(errors="replace") for p in (repo / "logs").rglob("*.log")}
    asked = {p.relative_to(repo) for p, text in logs.items() if "output cache key " in text}
    copied = {p.relative_to(repo) for p, text in logs.items()
              if "outputs copied from the output cache" in text}
    return asked, copied


def files(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def same_bytes(run: Path, tiny_run: Path, what: str) -> None:
    """Every file of `run`'s results/ is the tiny run's, byte for byte, and none is missing or extra."""
    made = files(run / "results")
    assert made.keys() == files(tiny_run / "results").keys(), what
    differ = [str(p) for p, data in made.items() if data != (tiny_run / "results" / p).read_bytes()]
    assert differ == [], f"{what}: not the tiny run's bytes"


@pytest.mark.slow
def test_interrupted_runs_resume_to_the_same_bytes_which_a_second_run_copies(tmp_path, request, monkeypatch):
    """Interrupted twice (Ctrl-C during the compile study, SIGTERM to Snakemake during the figures),
    then resumed with the same command: the results equal the session's uninterrupted run's, every
    file of results/ byte for byte (no wall time, date, path or commit that differs between runs: each
    job's keyed inputs are the same bytes). Then, results/ and logs/ deleted, the same command gets
    every output from the output cache: each job that asks it copies, and the bytes are the same.
    On the tiny config (tests/runs.py), which runs every stage that can be interrupted: what is tested is
    the interruption, the resumption and the cache, which a larger sweep would only make longer."""
    from tpu_matmul_repro.experiments.core.cache_dirs import CACHE_VARIABLE as CACHE_FOLDER
    from tpu_matmul_repro.experiments.core.provenance import git_sha

    repo = runs.copy_repository(tmp_path / "repo")
    # An output cache of its own, empty: every output is made here, not copied from the tiny run's.
    # The compile cache is the tiny run's (warm): its entries keep each compile's compile_s, a wall time.
    cache = runs.warm_compiles_cold_outputs(tmp_path / "cache")
    monkeypatch.setenv(CACHE_FOLDER, str(cache))
    interrupt(repo, "results/estimates/v5e/*.parquet", signal.SIGINT, whole_group=True)
    interrupt(repo, "results/figures/*.png", signal.SIGTERM, whole_group=False)
    stored = {p.parent.name for p in (cache / "outputs").glob("*/*/manifest.json")}  # by the interrupted runs
    result = runs.snakemake(repo, "--cores", "2")  # the same command, nothing added
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert not list(repo.rglob(".*.tmp"))  # no half-written table left behind
    # Determinism: the interrupted-and-resumed run and the uninterrupted one (same versions) agree. That
    # one is asked for only now, so that this test runs while another worker makes it.
    tiny_run = request.getfixturevalue("tiny_run")
    for table in ("estimates/v5e.parquet", "correctness.parquet", "matmul.parquet"):
        pd.testing.assert_frame_equal(stable_columns(pd.read_parquet(repo / "results" / table)),
                                      stable_columns(pd.read_parquet(tiny_run / "results" / table)))
    for lang in ("en", "zh"):
        assert (repo / "results" / "report" / f"report.{lang}.pdf").read_bytes().startswith(b"%PDF")
    asked, copied = asked_and_copied(repo)
    assert {"estimates", "correctness", "aggregate", "figures", "report"} <= {p.parts[1] for p in asked}
    # Made here: the resumed run copied only what an interrupted one had stored (a job stopped after
    # it stored its outputs but before Snakemake saw it end runs again, and finds them).
    for log in copied:
        entry = re.search(r"from the output cache \(.*, entry ([0-9a-f]{16})\)", (repo / log).read_text())
        assert entry and any(name.startswith(entry[1]) for name in stored), log
    estimated = pd.read_parquet(tiny_run / "results" / "matmul.parquet").query("source == 'estimate'")
    if set(estimated.git_sha) != {git_sha()}:  # e.g. a file edited while the suite runs
        pytest.skip(f"the tiny run's rows name commit {sorted(set(estimated.git_sha))}, this checkout is at "
                    f"{git_sha()}: the inputs are not the same bytes")
    same_bytes(repo, tiny_run, "made")
    shutil.rmtree(repo / "results"), shutil.rmtree(repo / "logs")
    result = runs.snakemake(repo, "--cores", "2")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    same_bytes(repo, tiny_run, "copied")
    assert asked_and_copied(repo) == (asked, asked)  # the same jobs asked, and every one copied


@pytest.mark.slow
def test_a_run_too_small_to_fit_compiles_none_and_says_why(tiny_run):
    """The tiny run (tests/runs.py) has one published point: no public compile job, every row in
    public_scores.csv with its reason, and fidelity.csv's public rows empty after the post's. (Here, not
    beside the public validation's other tests, which keep to one worker: a worker there would wait
    for the tiny run.)"""
    from tpu_matmul_repro.analysis import public_validation as pv
    from tpu_matmul_repro.analysis.public_measurements import load

    results = tiny_run / "results"
    scores = pd.read_csv(results / "public_scores.csv")
    plan = pv.planned(load())
    assert len(scores) == len(plan) and scores.model_seconds.isna().all()
    assert scores.skip_reason[plan.case.notna().to_numpy()].str.startswith("not fitted").all()
    assert not (results / "public" / "estimates").exists()
    fidelity = pd.read_csv(results / "fidelity.csv")
    assert fidelity.compared_with.iloc[0] == "published"
    public = fidelity[fidelity.compared_with == "public"]
    assert len(public) and (public.n == 0).all()
