"""Where a number came from: package versions and the repository's git commit."""
import datetime
import functools
import importlib.metadata
import os
import subprocess
from pathlib import Path

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
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if not epoch:
        try:
            epoch = subprocess.run(["git", "log", "-1", "--format=%ct"], cwd=ROOT, capture_output=True,
                                   text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            epoch = ""
    if epoch.isdigit():
        return datetime.datetime.fromtimestamp(int(epoch), datetime.UTC).date()
    return datetime.datetime.now(datetime.UTC).date()
