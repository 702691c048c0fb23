"""Measured runs: which of them each stage after the aggregate reads.

A carried file may hold the same sweep measured run after run (one `run_label` each), so the table
grows with runs while what a reader is shown must grow with configurations only. The figures draw,
and the summaries, claims and gallery read, each target's latest run: `read_results` reads no other
measured run, and no raw samples, from the table's file. The report's measurements section reads a
few columns of every measured row (`read_measured`) and shows a table per run where a target has few
runs, else each configuration's latest run beside the median over its runs (report/tables.py).
"""
import pandas as pd
import pyarrow.parquet as pq

from experiments.core.schema import SAMPLE_COLUMNS

RUN = ["target", "run_label"]
# What the report's measured tables and its provenance show of a measured row (report/tables.py).
MEASURED_SHOWN = [
    "source", "target", "device_kind", "experiment", "kernel", "dtype", "m", "k", "n", "bm", "bk", "bn",
    "vmem_limit_bytes", "search", "status", "seconds", "tflops", "p25_seconds", "p75_seconds", "wall_seconds",
    "n_samples", "timer", "near_dispatch_floor", "precision", "measured_over_estimate", "dispatch_floor_s",
    "num_chips", "num_devices", "run_label", "timestamp", "jax_version", "libtpu_version", "git_sha",
]


def latest_labels(measured: pd.DataFrame, n: int = 1) -> pd.DataFrame:
    """(target, run_label) of each target's latest `n` runs, by each run's last timestamp."""
    runs = measured.groupby(RUN, dropna=False).timestamp.max().reset_index()
    return runs.sort_values("timestamp", kind="stable").groupby("target").tail(n)[RUN]


def latest_runs(df: pd.DataFrame) -> pd.DataFrame:
    """Measured rows of each target's latest run only (by timestamp), other rows unchanged.

    Figures draw one measured curve per configuration; the table keeps every run.
    """
    measured = df[df.source == "measured"]
    if measured.empty:
        return df
    keep = measured.set_index(RUN).index.isin(pd.MultiIndex.from_frame(latest_labels(measured)))
    return pd.concat([df[df.source != "measured"], measured[keep]]).sort_index()


def read_results(path) -> pd.DataFrame:
    """The tidy table as the stages after the aggregate need it: every column but the raw samples
    (their statistics are columns already) and, of the measured rows, each target's latest run only.

    The latest runs are found from four columns of the measured rows; then only the rows kept are
    converted, so memory grows with the configurations kept, not with the runs the file holds.
    """
    names = pq.ParquetFile(path).schema_arrow.names
    columns = [c for c in names if c not in SAMPLE_COLUMNS]
    if not {"source", *RUN, "timestamp"} <= set(names):
        return pd.read_parquet(path, columns=columns)
    runs = pq.read_table(path, columns=[*RUN, "timestamp"], filters=[("source", "==", "measured")])
    if runs.num_rows == 0:
        return pd.read_parquet(path, columns=columns)
    runs = runs.group_by(RUN).aggregate([("timestamp", "max")]).rename_columns([*RUN, "timestamp"])
    keep = latest_labels(runs.to_pandas())
    filters = [[("source", "!=", "measured")]] + [
        [("source", "==", "measured"), ("target", "==", target), ("run_label", "==", label)]
        for target, label in keep.itertuples(index=False)]
    return pd.read_parquet(path, columns=columns, filters=filters)


def read_measured(path) -> pd.DataFrame:
    """Every measured row of the table's file, only the columns the report shows of it."""
    names = pq.ParquetFile(path).schema_arrow.names
    return pd.read_parquet(path, columns=[c for c in MEASURED_SHOWN if c in names],
                           filters=[("source", "==", "measured")])
