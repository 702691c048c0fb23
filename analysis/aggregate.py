"""The tidy results table: estimates, measurements and the post's published numbers, one row per KEY
(run_label keeps two machines' runs apart); XLA's baseline, compiled once per target and dtype,
joins every experiment of the same dtype at that experiment's sizes."""
import pandas as pd

from tpu_matmul_repro.analysis.summaries import HIGHEST_KERNEL
from tpu_matmul_repro.analysis.toolchain_rows import primary_rows
from tpu_matmul_repro.experiments.core import reading
from tpu_matmul_repro.experiments.core.chips import CHIPS, POST_CHIP
from tpu_matmul_repro.experiments.core.schema import (
    COLUMNS,
    DERIVED,
    INT_COLUMNS,
    KEY,
    SOURCES,
    DataError,
    conform,
)
from tpu_matmul_repro.experiments.measure.statistics import derive

SOURCE_ORDER = {source: i for i, source in enumerate(SOURCES)}


def load_published(path) -> pd.DataFrame:
    """The post's figures as rows of source "published", target v5e (see the CSV's header)."""
    raw = pd.read_csv(path, comment="#")
    expected = {"figure", "kernel", "dtype", "m", "k", "n", "bm", "bk", "bn", "status", "tflops"}
    missing = expected - set(raw.columns)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}")
    df = pd.DataFrame({
        "source": "published", "target": POST_CHIP, "device_kind": CHIPS[POST_CHIP].device_kind,
        "experiment": "v" + raw["figure"].astype(str),
        # The post calls v3's kernel over other blocks "v4"; here kernel names the code that ran.
        "kernel": raw["kernel"].replace({"v4": "v3"}),
        "dtype": raw["dtype"], "m": raw["m"], "k": raw["k"], "n": raw["n"],
        "bm": raw["bm"], "bk": raw["bk"], "bn": raw["bn"],
        "status": raw["status"], "tflops": raw["tflops"], "raised_limit": False, "search": False,
    })
    return df.reindex(columns=COLUMNS)


def load_measured(paths) -> pd.DataFrame:
    """Measured rows from results/measured/ and data/measured/ files, statistics derived from samples
    (a file's own DERIVED columns are dropped); the checks guard a file that bypassed the carried gate."""
    frames = []
    for path in paths:
        try:
            reading.check_file(path, "carried file")
        except reading.ReadError as e:
            raise DataError(str(e)) from None
        df = pd.read_parquet(path)
        missing = {"source", "target", "samples_s", "wall_samples_s"} - set(df.columns)
        if missing or not (df.source == "measured").all():
            raise DataError(f"{path}: not a measurement file of tpu-matmul-repro (missing columns "
                             f"{sorted(missing)} or rows whose source is not 'measured')")
        # the table's columns and types: a column a file holds empty (all NaN) reads as float otherwise
        frames.append(conform(df.drop(columns=list(DERIVED), errors="ignore")).assign(_file=str(path)))
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    df = pd.concat(frames, ignore_index=True)
    dup = df[df.duplicated(KEY, keep=False)]
    if len(dup):
        _, group = next(iter(dup.groupby(KEY, dropna=False, sort=False)))
        first, files = group.iloc[0], sorted(set(group._file))
        raise DataError(f"{len(dup)} measured rows appear in more than one file, e.g. "
                         f"{first['target']} {first['kernel']} {first['dtype']} "
                         f"{first.m}x{first.k}x{first.n} in "
                         f"{' and '.join(files)}: keep one of the files")
    return derive(df.drop(columns="_file"))


def attach_baseline(rows: pd.DataFrame) -> pd.DataFrame:
    """Copy each source's and target's XLA rows into every experiment of the same dtype, at its (m, k, n);
    those that join none stay as experiment "xla"."""
    # each toolchain's baseline joins its own experiments ("" for measured rows)
    rows = rows.assign(toolchain=rows["toolchain"].fillna("") if "toolchain" in rows else "")
    # only the DEFAULT baseline joins the experiments; its variants (xla_highest) stay under "xla"
    xla = rows[rows.experiment == "xla"]
    kernels = rows[rows.experiment != "xla"]
    parts, joined = [kernels], pd.Series(False, index=xla.index)
    groups = kernels.groupby(["source", "toolchain", "target", "experiment", "dtype"])
    for (source, toolchain, target, experiment, dtype), group in groups:
        shapes = set(zip(group.m, group.k, group.n, strict=True))
        match = ((xla.source == source) & (xla.toolchain == toolchain) & (xla.target == target)
                 & (xla.dtype == dtype) & (xla.kernel == "xla")
                 & pd.Series([s in shapes for s in zip(xla.m, xla.k, xla.n, strict=True)], index=xla.index,
                             dtype=bool))
        parts.append(xla[match].assign(experiment=experiment))
        joined |= match
    parts.append(xla[~joined])
    return pd.concat(parts, ignore_index=True)


def with_ratio(measured: pd.DataFrame, estimates: pd.DataFrame | None,
               toolchain: str | None = None, served: dict | None = None) -> pd.DataFrame:
    """measured_over_estimate = measured seconds / estimated seconds, for configurations with both
    (each target's estimates from its own compiler, when `toolchain` names the pipeline's own)."""
    if estimates is None:
        return measured.assign(measured_over_estimate=float("nan"))
    estimates = primary_rows(estimates, toolchain, served)
    # the estimate of the same target and configuration, whichever experiment it was filed under
    on = ["target", "kernel", "dtype", "m", "k", "n", "bm", "bk", "bn", "vmem_limit_bytes"]
    est = estimates[estimates.status == "ok"][on + ["seconds"]].drop_duplicates(on)
    est = est.rename(columns={"seconds": "_estimate"})
    out = measured.drop(columns="measured_over_estimate", errors="ignore").merge(est, on=on, how="left")
    out["measured_over_estimate"] = out["seconds"] / out.pop("_estimate")
    return out


def combine(estimates: list[pd.DataFrame], published: pd.DataFrame | None,
            measured: pd.DataFrame | None = None, toolchain: str | None = None,
            served: dict | None = None) -> pd.DataFrame:
    """The table; `toolchain` names the pipeline's own and `served` the other compilers of some targets
    (experiments/plan/toolchains.served), whose estimates measurements are compared with."""
    frames = [attach_baseline(pd.concat(estimates, ignore_index=True))] if estimates else []
    if measured is not None and len(measured):
        frames.append(with_ratio(attach_baseline(measured), frames[0] if frames else None, toolchain, served))
    if published is not None:
        frames.append(published)
    df = pd.concat([f.reindex(columns=COLUMNS) for f in frames], ignore_index=True)
    for col in INT_COLUMNS:
        df[col] = df[col].astype("Int64")
    df["toolchain"] = df["toolchain"].fillna("")  # published rows come from no toolchain
    est = df.source == "estimate"
    df.loc[est, "precision"] = df.loc[est, "kernel"].map(estimate_precision)
    return sort_rows(df)


def estimate_precision(kernel: str) -> str:
    """The precision an estimate's dot is compiled at: HIGHEST for XLA's variant, else DEFAULT."""
    return "HIGHEST" if kernel == HIGHEST_KERNEL else "DEFAULT"


def sort_rows(df: pd.DataFrame) -> pd.DataFrame:
    """A stable, meaningful row order: source, target, experiment, kernel, dtype, sizes, blocks."""
    order = df.assign(_source=df.source.map(SOURCE_ORDER).fillna(9))
    order = order.sort_values(["_source"] + KEY[1:], kind="stable", na_position="first")
    return order.drop(columns="_source").reset_index(drop=True)


def check_unique(df: pd.DataFrame) -> None:
    dup = df[df.duplicated(KEY, keep=False)]
    if len(dup):
        raise ValueError(f"{len(dup)} rows share a key {KEY}:\n{dup[KEY].head(10).to_string()}")
