"""Where a number came from: package versions and the repository's git commit."""
import datetime
import functools
import importlib.metadata
import subprocess
from pathlib import Path

from tpu_matmul_repro.experiments.core.runtime import source_date_epoch

ROOT = Path(__file__).resolve().parents[2]


def version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def git_sha() -> str:
    """The checkout's commit, with "-dirty" when tracked files differ from it; "unknown" outside git."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("-dirty" if dirty else "")


@functools.cache
def provenance() -> dict:
    return {"jax_version": version("jax"), "jaxlib_version": version("jaxlib"),
            "libtpu_version": version("libtpu"), "git_sha": git_sha()}


def build_date() -> datetime.date:
    """The date a report states: $SOURCE_DATE_EPOCH (reproducible-builds.org) if set, else the commit's
    time, else today. So the same commit and table give the same bytes on any day."""
    epoch = source_date_epoch()  # a bad value is refused before any job (Snakefile)
    if epoch is not None:
        return datetime.datetime.fromtimestamp(epoch, datetime.UTC).date()
    try:
        commit = subprocess.run(["git", "log", "-1", "--format=%ct"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = ""
    if commit.isascii() and commit.isdigit():
        return datetime.datetime.fromtimestamp(int(commit), datetime.UTC).date()
    return datetime.datetime.now(datetime.UTC).date()
