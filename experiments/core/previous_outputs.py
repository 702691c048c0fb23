"""The previous version of every output a run replaces, kept (hard-linked) until the run ends and put
back, with its metadata record, where a job fails or is stopped (docs/reliability.md).
"""
import logging
import os
import shutil
from pathlib import Path

FOLDER = Path(".snakemake") / "previous-outputs"  # beside Snakemake's own bookkeeping
log = logging.getLogger(__name__)


class PreviousOutputs:
    """Links to the outputs a run is about to replace, and how to put them back."""

    def __init__(self, folder: Path = FOLDER):
        self.folder = Path(folder)
        self.records = {}  # output path -> Snakemake's metadata record of it (None: it had none)

    def keep(self, outputs, read_record=lambda path: None) -> list[str]:
        """Link each existing file of `outputs` (paths relative to the working directory) into the
        folder; first put back what a killed run left there. Returns the paths kept."""
        leftover = self.restore(write_record=None)
        if leftover:
            log.warning("put back %d previous outputs that a run stopped without its clean-up had "
                        "removed: %s", len(leftover), _named(leftover))
        kept, failed = [], []
        for path in sorted({str(p) for p in outputs}):
            if not os.path.isfile(path) or os.path.isabs(path) or path.startswith(".."):
                continue
            link = self.folder / path
            try:
                link.parent.mkdir(parents=True, exist_ok=True)
                os.link(path, link)
            except OSError as e:  # another file system (EXDEV), no links (some network mounts), full
                failed.append(f"{path}: {e.strerror or e}")
                continue
            self.records[path] = read_record(path)
            kept.append(path)
        if failed:
            log.warning("%d previous outputs are not kept (%s): if their job fails, they are gone, as "
                        "Snakemake leaves them", len(failed), failed[0])
        return kept

    def restore(self, write_record=None) -> list[str]:
        """Put back each kept file whose output is missing now (a failed or stopped job's), and its
        metadata record as it was; drop the rest. Returns the paths put back."""
        restored, stuck = [], False
        if not self.folder.is_dir():
            return restored
        for link in sorted(p for p in self.folder.rglob("*") if p.is_file()):
            path = link.relative_to(self.folder).as_posix()
            if os.path.lexists(path):
                continue  # made again by this run (or restored from the output cache)
            try:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                os.link(link, path)
            except OSError as e:
                log.warning("could not put back the previous %s (%s); it stays in %s", path,
                            e.strerror or e, link)
                stuck = True
                continue
            record = self.records.get(path)
            if write_record is not None and record is not None:
                write_record(path, record)
            restored.append(path)
        if not stuck:  # else what could not be put back stays for the next run's start
            self.discard()
        return restored

    def discard(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.records = {}


def _named(paths, shown: int = 5) -> str:
    more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
    return ", ".join(paths[:shown]) + more


def restored_message(paths) -> str:
    return (f"Kept the previous version of {len(paths)} output{'s' if len(paths) != 1 else ''} that the "
            f"failed or stopped jobs had removed: {_named(paths)}.")
