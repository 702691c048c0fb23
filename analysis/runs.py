"""Which measured runs each stage after the aggregate reads: each target's latest (read_results),
or a few columns of every measured row for the report's measurements section (read_measured);
streamed, so memory follows the rows kept (docs/measuring.md)."""
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from tpu_matmul_repro.experiments.core.schema import SAMPLE_COLUMNS

RUN = ["target", "run_label"]
ROW_GROUP_ROWS = 16384  # rows per row group of results/matmul.parquet, so that `scan` can stream it
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
    """Measured rows of each target's latest run only (by timestamp), other rows unchanged."""
    measured = df[df.source == "measured"]
    if measured.empty:
        return df
    keep = measured.set_index(RUN).index.isin(pd.MultiIndex.from_frame(latest_labels(measured)))
    return pd.concat([df[df.source != "measured"], measured[keep]]).sort_index()


# Read a few thousand rows at a time, one row group after another, nothing ahead: peak memory then
# follows the rows kept, not the file (a filtered pandas read decodes whole columns first).
STREAMING = dict(batch_size=4096, batch_readahead=1, fragment_readahead=1, use_threads=False)
PARQUET = ds.ParquetFileFormat(default_fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=False))


def scan(path, columns, where) -> pa.Table:
    """The rows of a parquet file that satisfy `where` (None: all), only `columns`, read as a stream."""
    return ds.dataset(path, format=PARQUET).to_table(columns=columns, filter=where, **STREAMING)


def read_results(path) -> pd.DataFrame:
    """The tidy table without raw samples and with each target's latest measured run only, streamed:
    memory grows with the configurations kept, not with the runs the file holds."""
    names = pq.ParquetFile(path).schema_arrow.names
    columns = [c for c in names if c not in SAMPLE_COLUMNS]
    measured = ds.field("source") == "measured"
    if not {"source", *RUN, "timestamp"} <= set(names):
        return scan(path, columns, None).to_pandas()
    ends = []
    for batch in ds.dataset(path, format=PARQUET).to_batches(columns=[*RUN, "timestamp"], filter=measured,
                                                             **STREAMING):
        ends.append(pa.Table.from_batches([batch]).group_by(RUN).aggregate([("timestamp", "max")]))
    keep = ~measured
    if ends:
        runs = pa.concat_tables(ends).group_by(RUN).aggregate([("timestamp_max", "max")])
        runs = runs.rename_columns([*RUN, "timestamp"]).to_pandas()
        for target, label in latest_labels(runs).itertuples(index=False):
            keep = keep | ((ds.field("target") == target) & (ds.field("run_label") == label))
    return scan(path, columns, keep).to_pandas()


def read_measured(path) -> pd.DataFrame:
    """Every measured row of the table's file, only the columns the report shows of it."""
    names = pq.ParquetFile(path).schema_arrow.names
    return scan(path, [c for c in MEASURED_SHOWN if c in names], ds.field("source") == "measured").to_pandas()
