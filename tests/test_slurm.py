"""The SLURM profile against a real SLURM: a one-node cluster on localhost (tests/slurm/cluster.sh) runs the
CI-sized workflow with `--profile profiles/slurm`, every job goes through sbatch, and the tables it makes
match a local run's row for row.

Needs Debian's slurmctld, slurmd, slurm-client and munge (`tests/slurm/cluster.sh install`) and root; skips
where they are missing, unless REQUIRE_SLURM=1 (CI) turns the skip into a failure. The local run to compare
with is made here, or taken from SLURM_TEST_LOCAL_RUN: the working directory of a local run of the same
commit and the same CI config (.ci/run passes its own, so CI runs the workflow once less).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from tpu_matmul_repro.experiments.measure.device import CACHE_VARIABLE

# one cluster: every test of this file on the same worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("slurm")]

ROOT = Path(__file__).resolve().parent.parent
CLUSTER = ROOT / "tests" / "slurm" / "cluster.sh"
# .ci/run's own local run: the CI config with the post's toolchain (its environment is cached by then)
CI_CONFIGS = ("config/config.ci.yaml", "config/ci-post-toolchain.yaml")
CI_RUN = ("--configfile", *CI_CONFIGS, "--replace-workflow-config")
TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scancel")
# For this cluster only, not the profile: it has no accounting database, so sacct answers "Slurm accounting
# storage is disabled" and squeue follows the jobs (slurm.conf keeps finished jobs for MinJobAge=3600 s);
# its jobs take seconds, so the first status check comes after 5 s instead of 40 s.
CLUSTER_OPTIONS = ("--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "5")
LOCAL_RUN_VARIABLE = "SLURM_TEST_LOCAL_RUN"
CANNOT_HOST = 3  # cluster.sh's exit status where this machine cannot host the test cluster
TIMEOUT_S = 1800

# Columns no two runs share: wall-clock times, and for measured rows (XLA timed on this CPU) everything
# derived from the timing samples, including the calls per sample the harness calibrates from a first timing.
WALL_CLOCK = ["compile_s"]
TIMING = ["samples_s", "wall_samples_s", "device_samples_s", "calls_per_sample", "seconds", "p25_seconds",
          "p75_seconds", "wall_seconds", "batched_seconds", "dispatch_floor_s", "near_dispatch_floor",
          "tflops", "measured_over_estimate", "measured_over_model", "wall_over_model", "timestamp"]


def unavailable() -> str:
    if os.environ.get("REQUIRE_SLURM") != "1" and not os.environ.get("SLURM_TEST"):
        # minutes of cluster and workflow: run when asked (.ci/run asks with REQUIRE_SLURM=1)
        return "the real-SLURM test runs when asked: REQUIRE_SLURM=1 or SLURM_TEST=1"
    missing = [tool for tool in TOOLS if not shutil.which(tool)]
    if missing:
        return (f"SLURM is not installed here (no {', '.join(missing)}): `tests/slurm/cluster.sh install` "
                "installs Debian's slurmctld, slurmd, slurm-client and munge")
    if os.geteuid() != 0:
        return "the one-node SLURM cluster needs root (slurmd starts jobs as their user)"
    return ""


def skip_unless_required(reason: str) -> None:
    if reason and os.environ.get("REQUIRE_SLURM") == "1":
        pytest.fail(f"REQUIRE_SLURM=1 but {reason}")
    if reason:
        pytest.skip(reason)


def snakemake(workdir: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    # Each job finds the machine's devices itself, as on a cluster (no device cache from this process).
    env = {k: v for k, v in {**os.environ, **(env or {})}.items() if k != CACHE_VARIABLE}
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), *args]
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)


def make_workdir(path: Path) -> Path:
    shutil.copytree(ROOT / "config", path / "config")
    return path


@pytest.fixture(scope="module")
def cluster():
    """A running one-node cluster, stopped afterwards: the environment that points sbatch, squeue at it."""
    skip_unless_required(unavailable())
    # A short path: munge's socket lives in it (108 bytes at most).
    directory = Path(tempfile.mkdtemp(prefix="slurm-", dir="/tmp"))
    try:
        up = subprocess.run([str(CLUSTER), "up", str(directory)], capture_output=True, text=True, timeout=120)
        if up.returncode == CANNOT_HOST:
            skip_unless_required(up.stderr.strip())
        assert up.returncode == 0, f"the cluster did not start:\n{up.stdout}{up.stderr}"
        yield {"SLURM_CONF": str(directory / "slurm.conf")}
    finally:
        down = subprocess.run([str(CLUSTER), "down", str(directory)], capture_output=True, text=True,
                              timeout=120)
        shutil.rmtree(directory, ignore_errors=True)
        assert down.returncode == 0, f"the cluster did not stop:\n{down.stdout}{down.stderr}"


@pytest.fixture(scope="module")
def slurm_run(cluster, tmp_path_factory):
    """The CI config through the SLURM profile: the working directory and Snakemake's log.

    The CI config becomes the working directory's config/config.yaml, instead of `--configfile ...
    --replace-workflow-config`: Snakemake 9.27.1 does not pass --replace-workflow-config on to the jobs
    it submits (spawn_jobs.py, general_args), so each job would read config/config.yaml extended by the CI
    config and plan other jobs than the main process (compile_study_target waited for v2 and v4 estimates
    the CI config never asks for).
    """
    workdir = make_workdir(tmp_path_factory.mktemp("slurm_run"))
    # the CI configs, one after the other in one file (they share no top-level key)
    (workdir / "config" / "config.yaml").write_text("\n".join((workdir / c).read_text() for c in CI_CONFIGS))
    result = snakemake(workdir, "--profile", str(ROOT / "profiles" / "slurm"), *CLUSTER_OPTIONS, env=cluster)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-6000:]
    return workdir, log, cluster


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """A local run of the same commit and config: SLURM_TEST_LOCAL_RUN's, or one made here."""
    given = os.environ.get(LOCAL_RUN_VARIABLE)
    if given:
        workdir = Path(given)
        assert (workdir / "results" / "matmul.parquet").exists(), f"{LOCAL_RUN_VARIABLE}={given}: no results"
        return workdir
    workdir = make_workdir(tmp_path_factory.mktemp("local_run"))
    result = snakemake(workdir, "--cores", "2", *CI_RUN)
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    return workdir


def slurm_jobs(run_id: str, env: dict) -> pd.DataFrame:
    """The cluster's record of one Snakemake run's jobs (squeue keeps finished ones for MinJobAge): SLURM
    job id, state, start and end, and the rule (the plugin's job comment is rule_<name>_wildcards_...)."""
    query = ["squeue", "--states=all", "--noheader", "--format=%i|%T|%S|%e|%k", "--name", run_id]
    out = subprocess.run(query, env={**os.environ, **env}, capture_output=True, text=True, check=True).stdout
    jobs = pd.DataFrame([line.split("|", 4) for line in out.splitlines() if line],
                        columns=["jobid", "state", "start", "end", "comment"])
    jobs["rule"] = jobs.comment.str.removeprefix("rule_").str.split("_wildcards").str[0]
    jobs["start"], jobs["end"] = pd.to_datetime(jobs.start), pd.to_datetime(jobs.end)
    return jobs


def test_every_job_ran_as_a_slurm_job(slurm_run):
    workdir, log, env = slurm_run
    run_ids = re.findall(r"SLURM run ID: (\S+)", log)
    assert len(run_ids) == 1, log[-3000:]
    submitted = set(re.findall(r"has been submitted with SLURM jobid (\d+)", log))
    jobs = slurm_jobs(run_ids[0], env)
    assert len(submitted) > 0 and set(jobs.jobid) == submitted, (jobs, submitted)
    assert (jobs.state == "COMPLETED").all(), jobs
    # Every rule but the target `all` (which runs nothing) ran on the cluster, each job once.
    assert set(jobs.rule) == {"correctness_kernel", "correctness_table", "compile_study_job",
                              "compile_study_target", "measure_device", "measure_job", "aggregate", "figures",
                              "summaries", "claims", "gallery", "report", "toolchain_environment",
                              "toolchain_study_job", "toolchain_target", "then_and_now",
                              "then_and_now_claims"}, jobs
    total = re.search(r"^total\s+(\d+)$", log, re.MULTILINE)  # Snakemake's job stats
    assert total and len(jobs) == int(total.group(1)) - 1, log[:3000]


def test_a_measuring_job_had_its_node_to_itself(slurm_run):
    """The profile's --exclusive: no other job of the run overlapped a measuring job in time."""
    workdir, log, env = slurm_run
    jobs = slurm_jobs(re.findall(r"SLURM run ID: (\S+)", log)[0], env)
    measuring = jobs.index[jobs.rule == "measure_job"]
    assert len(measuring) == 2, jobs  # the CI config times XLA in float32 and bfloat16 on the CPU
    for i in measuring:
        overlapping = (jobs.index != i) & (jobs.start < jobs.end[i]) & (jobs.end > jobs.start[i])
        assert not overlapping.any(), jobs[overlapping | (jobs.index == i)]


def stable(df: pd.DataFrame, drop: list[str]) -> pd.DataFrame:
    df = df.drop(columns=drop).reset_index(drop=True)
    # The same commit, but a tracked file edited between the two runs marks one of them "-dirty".
    return df.assign(git_sha=df.git_sha.str.removesuffix("-dirty")) if "git_sha" in df else df


def test_the_results_table_matches_a_local_run_row_for_row(slurm_run, local_run):
    ours, theirs = (pd.read_parquet(d / "results" / "matmul.parquet") for d in (slurm_run[0], local_run))
    assert list(ours.source) == list(theirs.source)
    # Estimates and published rows: every column but compile times (estimates come from the same compiler).
    exact = ours.source != "measured"
    pd.testing.assert_frame_equal(stable(ours[exact], WALL_CLOCK), stable(theirs[exact.values], WALL_CLOCK))
    # Measured rows (the CI config times XLA on the CPU, once per run): same cases, statuses, sample counts,
    # numerical errors and device, each with its own timings.
    measured = ~exact
    pd.testing.assert_frame_equal(stable(ours[measured], WALL_CLOCK + TIMING),
                                  stable(theirs[measured.values], WALL_CLOCK + TIMING))
    for df in (ours[measured], theirs[measured.values]):
        assert len(df) and (df.status == "ok").all() and (df.tflops > 0).all()


def test_the_correctness_table_matches_a_local_run(slurm_run, local_run):
    ours, theirs = (pd.read_parquet(d / "results" / "correctness.parquet") for d in (slurm_run[0], local_run))
    drop = [c for c in WALL_CLOCK if c in ours]
    pd.testing.assert_frame_equal(stable(ours, drop), stable(theirs, drop))
    assert ours.passed.all()


def test_the_summaries_match_a_local_run_byte_for_byte(slurm_run, local_run):
    """Built from estimates and published numbers only (the CI config measures the CPU, no TPU)."""
    for name in ("fidelity.csv", "best_vs_xla.csv"):
        ours, theirs = ((d / "results" / name).read_bytes() for d in (slurm_run[0], local_run))
        assert ours == theirs, name
