"""Writing outputs safely: a file appears complete or not at all, and a failed write keeps the previous
one. Every writer of results/ goes through write_atomic (tests/test_messages.py lists them)."""
import errno
import glob
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tpu_matmul_repro.experiments.core.runtime import disk_full

if TYPE_CHECKING:  # pandas only where a frame is read: a job whose outputs come from the output cache
    import pandas as pd  # (experiments/core/output_cache.py) copies them without it


def write_parquet_atomic(df: "pd.DataFrame", path, row_group_size: int | None = None) -> None:
    write_atomic(path, lambda tmp: df.to_parquet(tmp, index=False, row_group_size=row_group_size))


def write_csv_atomic(df: "pd.DataFrame", path) -> None:
    write_atomic(path, lambda tmp: df.to_csv(tmp, index=False, float_format="%.6g"))


def write_text_atomic(text: str, path, *, shared: bool = False) -> None:
    write_atomic(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"), shared=shared)


SHARED_DEBRIS_S = 3600  # a temporary file of a shared path this old is no live writer's


def write_atomic(path, write, *, shared: bool = False) -> None:
    """Call write(tmp) on a temporary file beside `path`, then rename it into place: a kill midway leaves
    the previous file or none, never a partial one. The file gets a plain open()'s permissions (a report
    must be readable by a web server); earlier temporary files of `path` are removed first (`shared`: several
    writers at once, a cache entry: only those older than an hour)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for debris in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        try:
            if not shared or time.time() - debris.stat().st_mtime > SHARED_DEBRIS_S:
                debris.unlink(missing_ok=True)
        except FileNotFoundError:  # its writer renamed or removed it meanwhile
            pass
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise _named(e, path) from None
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError) and disk_full(e):
            raise _named(e, path) from None
        raise


def _named(e: OSError, path: Path) -> OSError:
    """A full disk as an error naming the output (not its temporary file, or nothing, as pyarrow's and
    matplotlib's errors do), for the job's one-line message (runtime.disk_full_message)."""
    if not disk_full(e):
        return e
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def concat_parquet(paths) -> "pd.DataFrame":
    import pandas as pd

    frames = [pd.read_parquet(p) for p in paths]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def current_umask() -> int:
    mask = os.umask(0)  # reading the umask means setting it: set it straight back
    os.umask(mask)
    return mask
