"""The tiny pipeline run that the end-to-end tests share (conftest.py's `tiny_run` makes it once per
session), and the helpers to run Snakemake on a copy of the repository with the tiny config.

The tiny config compiles two kernels at one size for one target, checks two kernels at one shape and
measures nothing here, yet every stage runs (compile study, correctness, table, timing model, claims,
the then-and-now study, figures, gallery, report), and the run carries in a measurement file from a
TPU VM (`CARRIED`). Tests whose meaning is a stage's rebuild rules, a refusal that leaves the
outputs alone or an interrupted run's resumption need every stage, not the CI config's sweep (which
.ci/run runs end to end).
"""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tpu_matmul_repro.experiments.core import cache_dirs

ROOT = Path(__file__).resolve().parent.parent
TINY_RUN = ("--configfile", "config/tiny.yaml", "--replace-workflow-config")
CARRIED = Path("data/measured/v5e-tpu-vm.parquet")  # the tiny run's measurement from a TPU VM

TINY = {
    "correctness": {
        "tolerance": {"float32": 1e-5, "bfloat16": 1e-2, "int8": 0},
        "shapes": [[256, 256, 256]],
        "kernels": {"v1": {"dtypes": ["float32"]},
                    "v3": {"dtypes": ["float32"], "blocks": [[128, 128, 128]]}},
    },
    "targets": ["v5e"],
    "compile_study": {
        "sizes": [512],
        "experiments": {"v1": {"kernel": "v1", "dtypes": ["float32"]},
                        "v3": {"kernel": "v3", "dtypes": ["float32"], "blocks": [[256, 256, 256]]}},
    },
    "measure": {"device": "off", "samples": 5},  # carried files in the tests hold 5 samples a row
    "studies": ["then_and_now"],  # as the default config: a study's code reruns its outputs too
}


def snakemake(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """Snakemake in a copy of the repository (its own Snakefile) on the tiny config."""
    cmd = [sys.executable, "-m", "snakemake", *TINY_RUN, *args]
    return subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=900)


def planned(repo: Path) -> dict[str, int]:
    """rule -> job count that a dry run plans ({} when nothing is to be done)."""
    result = snakemake(repo, "--dry-run")
    assert result.returncode == 0, result.stdout + result.stderr
    stats = result.stdout.split("Job stats:")[-1] if "Job stats:" in result.stdout else ""
    return {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", stats, flags=re.M) if rule != "total"}


def copy_repository(dest: Path) -> Path:
    """The tracked files of this checkout (with their modification times), as a clone would have them,
    the tiny config as config/tiny.yaml and a measurement file carried in from a TPU VM (`CARRIED`)."""
    from test_carried import measured_rows
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    for name in files:
        if (ROOT / name).is_symlink():  # the package's links to its folders
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).symlink_to((ROOT / name).readlink())
        elif (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    (dest / "config" / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    measured_rows().assign(run_label="tpu-vm").to_parquet(dest / CARRIED, index=False)
    return dest


def make_tiny_run(repo: Path) -> None:
    """A copy of the repository with a finished run of the tiny config: nothing left to do."""
    copy_repository(repo)
    result = snakemake(repo, "--cores", "2")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert planned(repo) == {}


def copy_run(run: Path, dest: Path) -> Path:
    """A copy of a finished run (results/ and .snakemake/ included, modification times kept) for a test
    to change: the shared run stays as it was made for the tests that only read it."""
    return Path(shutil.copytree(run, dest, symlinks=True))


def warm_compiles_cold_outputs(folder: Path) -> Path:
    """A cache folder whose compile entries are the user's (linked: the tiny run's compiles are warm)
    and whose output cache is empty: every job that asks the output cache makes its outputs. A test that
    reads what a job logs while it works runs with $TPU_MATMUL_REPRO_CACHE set to it: the user's output
    cache may hold that job's outputs from an earlier run of the same test."""
    folder.mkdir()
    compiles = cache_dirs.cache_folder("compile")  # the tiny run's (None: turned off)
    for shard in compiles.glob("??") if compiles and compiles.is_dir() else []:
        (folder / shard.name).symlink_to(shard, target_is_directory=True)
    return folder
