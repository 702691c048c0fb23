"""The tidy results table: estimates, measurements and the post's published numbers, one row each.

Key: (source, target, experiment, kernel, dtype, m, k, n, bm, bk, bn, vmem_limit_bytes). XLA's
baseline is compiled once per target and dtype (experiment "xla") and joins every experiment of the
same dtype here, at that experiment's sizes, so each experiment's rows carry their own baseline.
"""
import pandas as pd

from experiments.study import COLUMNS, INT_COLUMNS

KEY = ["source", "target", "experiment", "kernel", "dtype", "m", "k", "n", "bm", "bk", "bn",
       "vmem_limit_bytes"]
SOURCE_ORDER = {"published": 0, "estimate": 1, "measured": 2}


def load_published(path) -> pd.DataFrame:
    """The post's figures as rows of source "published", target v5e (see the CSV's header)."""
    raw = pd.read_csv(path, comment="#")
    expected = {"figure", "kernel", "dtype", "m", "k", "n", "bm", "bk", "bn", "status", "tflops"}
    missing = expected - set(raw.columns)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}")
    df = pd.DataFrame({
        "source": "published", "target": "v5e", "device_kind": "TPU v5 lite",
        "experiment": "v" + raw["figure"].astype(str),
        # The post calls v3's kernel over other blocks "v4"; here kernel names the code that ran.
        "kernel": raw["kernel"].replace({"v4": "v3"}),
        "dtype": raw["dtype"], "m": raw["m"], "k": raw["k"], "n": raw["n"],
        "bm": raw["bm"], "bk": raw["bk"], "bn": raw["bn"],
        "status": raw["status"], "tflops": raw["tflops"], "raised_limit": False, "search": False,
    })
    return df.reindex(columns=COLUMNS)


def attach_baseline(estimates: pd.DataFrame) -> pd.DataFrame:
    """Copy each target's XLA rows into every experiment of the same dtype, at its sizes."""
    xla = estimates[estimates.experiment == "xla"]
    kernels = estimates[estimates.experiment != "xla"]
    parts = [kernels]
    for (target, experiment, dtype), group in kernels.groupby(["target", "experiment", "dtype"]):
        sizes = set(group.m)
        base = xla[(xla.target == target) & (xla.dtype == dtype) & xla.m.isin(sizes)]
        parts.append(base.assign(experiment=experiment))
    return pd.concat(parts, ignore_index=True)


def combine(estimates: list[pd.DataFrame], published: pd.DataFrame | None,
            measured: list[pd.DataFrame] = ()) -> pd.DataFrame:
    frames = [attach_baseline(pd.concat(estimates, ignore_index=True))] if estimates else []
    frames += list(measured)
    if published is not None:
        frames.append(published)
    df = pd.concat([f.reindex(columns=COLUMNS) for f in frames], ignore_index=True)
    for col in INT_COLUMNS:
        df[col] = df[col].astype("Int64")
    return sort_rows(df)


def sort_rows(df: pd.DataFrame) -> pd.DataFrame:
    """A stable, meaningful row order: source, target, experiment, kernel, dtype, sizes, blocks."""
    order = df.assign(_source=df.source.map(SOURCE_ORDER).fillna(9))
    order = order.sort_values(["_source"] + KEY[1:], kind="stable", na_position="first")
    return order.drop(columns="_source").reset_index(drop=True)


def check_unique(df: pd.DataFrame) -> None:
    dup = df[df.duplicated(KEY, keep=False)]
    if len(dup):
        raise ValueError(f"{len(dup)} rows share a key {KEY}:\n{dup[KEY].head(10).to_string()}")
