"""A full disk in the middle of a run (issue 39): the previous table, figures and reports survive, and
the message names the file that could not be written. The session's tiny run, copied onto a small
tmpfs of its own that is then filled to a few hundred KiB; skipped where no tmpfs can be mounted
(mounting needs root). tests/test_messages.py checks the same with a simulated ENOSPC, in process."""
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from runs import snakemake

TMPFS_MIB = 12


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_MIB}m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"no tmpfs to fill here ({done.stderr.strip() or 'mount failed'})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(disk: Path, leave_kib: int) -> None:
    free = shutil.disk_usage(disk).free
    with open(disk / "filler", "wb") as f:
        os.posix_fallocate(f.fileno(), 0, free - leave_kib * 1024)


def digests(repo: Path, paths) -> dict:
    return {p: hashlib.sha256((repo / p).read_bytes()).hexdigest() for p in paths}


@pytest.mark.slow
@pytest.mark.parametrize("stage, leave_kib, failed_output", [
    ("aggregate", 48, "results/matmul.parquet"),  # the table no longer fits beside its previous version
    ("figures", 400, "results/figures/"),  # Snakemake had removed all 32 figures, 30 stayed lost
])
def test_a_full_disk_leaves_the_previous_outputs_and_names_the_file(tiny_run, small_disk, stage, leave_kib,
                                                                    failed_output):
    repo = Path(shutil.copytree(tiny_run, small_disk / "repo", symlinks=True))
    kept = ["results/matmul.parquet", *sorted(str(p.relative_to(repo)) for p in
                                             (repo / "results").glob("figures/*")),
            *sorted(str(p.relative_to(repo)) for p in (repo / "results").glob("report/report.*"))]
    before = digests(repo, kept)
    fill(small_disk, leave_kib)
    result = snakemake(repo, "--cores", "1", "--forcerun", stage)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"no space left on the device writing {failed_output}" in output, output[-3000:]
    assert "Kept the previous version of" in output, output[-3000:]
    assert digests(repo, kept) == before
    (small_disk / "filler").unlink()
    result = snakemake(repo, "--dry-run")  # the records came back too: nothing to redo after a forced run
    assert "Nothing to be done" in result.stdout + result.stderr, result.stdout[-2000:]
