"""Writing tables safely: a file appears complete or not at all."""
import os
import tempfile
from pathlib import Path

import pandas as pd


def write_parquet_atomic(df: pd.DataFrame, path) -> None:
    write_atomic(path, lambda tmp: df.to_parquet(tmp, index=False))


def write_csv_atomic(df: pd.DataFrame, path) -> None:
    write_atomic(path, lambda tmp: df.to_csv(tmp, index=False, float_format="%.6g"))


def write_text_atomic(text: str, path) -> None:
    write_atomic(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def write_atomic(path, write) -> None:
    """Call write(tmp) on a temporary file beside `path`, then rename it into place (atomic on POSIX):
    an exception or a kill midway leaves the previous file, or none, never a partial one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def concat_parquet(paths) -> pd.DataFrame:
    frames = [pd.read_parquet(p) for p in paths]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
