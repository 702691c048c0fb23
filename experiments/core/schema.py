"""The tidy results table, defined once: its columns, their types, its statuses and its key.

One row per estimate, measurement or published number (`source`). Every stage that writes rows
(the compile study, the measurement harness, the published reference) and every stage that reads
them (aggregation, figures, report) takes the column list from here; `conform` gives any frame the
table's columns in order and its dtypes.
"""
import numpy as np
import pandas as pd

from experiments.core.runtime import UserError

# Prediction intervals of the modelled columns (experiments/analysis/intervals.py): at these levels (%),
# <column>_lo<level> and <column>_hi<level> beside each of them.
MODELLED_COLUMNS = ("model_device_seconds", "model_post_seconds", "model_device_tflops", "model_post_tflops")
INTERVAL_LEVELS = (80, 95)
INTERVAL_COLUMNS = [f"{col}_{side}{level}" for col in MODELLED_COLUMNS for level in INTERVAL_LEVELS
                    for side in ("lo", "hi")]

COLUMNS = [
    "source", "toolchain", "target", "device_kind", "experiment", "kernel", "dtype", "m", "k", "n",
    "bm", "bk", "bn", "status", "vmem_bytes", "vmem_limit_bytes", "oom_limit_bytes", "raised_limit",
    "vmem_method", "est_cycles", "cycles_method",
    "compute_seconds", "hbm_bytes", "hbm_seconds", "seconds", "tflops", "roofline_tflops",
    "peak_tflops", "hbm_bytes_per_s", "search", "compile_s", "error",
    # the timing model (experiments/analysis/timing_model.py): estimate rows, and measured rows beside them
    "model_device_seconds", "model_device_tflops", "model_post_seconds", "model_post_tflops", "model_fit",
    "estimate_nonmonotonic", "measured_over_model", "wall_over_model",
    # xla_estimate_method: cost_model, or monotone_envelope where the modelled columns replace a dip
    # of libtpu's cost model by the best smaller problem's rate; model_interval: how the bands were made
    "xla_estimate_method", *INTERVAL_COLUMNS, "model_interval",
    # measured rows only (experiments/measure/harness.py, experiments/measure/statistics.py)
    "rel_error", "max_tile_error", "precision", "timer", "calls_per_sample",
    "device_samples_s", "samples_s", "wall_samples_s", "dispatch_floor_s",
    "n_samples", "p25_seconds", "p75_seconds", "batched_seconds", "wall_seconds", "near_dispatch_floor",
    "measured_over_estimate", "num_chips", "num_devices", "run_label", "timestamp",
    "jax_version", "jaxlib_version", "libtpu_version", "git_sha",
]
INT_COLUMNS = ("bm", "bk", "bn", "vmem_bytes", "vmem_limit_bytes", "oom_limit_bytes", "est_cycles",
               "hbm_bytes", "calls_per_sample", "n_samples", "num_chips", "num_devices")
FLOAT_COLUMNS = ("compute_seconds", "hbm_seconds", "seconds", "tflops", "roofline_tflops", "compile_s",
                 "peak_tflops", "hbm_bytes_per_s", "rel_error", "p25_seconds", "p75_seconds", "wall_seconds",
                 "measured_over_estimate", "max_tile_error", "dispatch_floor_s", "batched_seconds",
                 "model_device_seconds", "model_device_tflops", "model_post_seconds", "model_post_tflops",
                 "measured_over_model", "wall_over_model", *INTERVAL_COLUMNS)
# A measured row's raw samples (lists of seconds): the table keeps them, and the statistics derived
# from them (experiments/measure/statistics.py) are columns of their own, so readers of the table
# after the aggregate leave them out (experiments/analysis/runs.py).
SAMPLE_COLUMNS = ("device_samples_s", "samples_s", "wall_samples_s")
BOOL_COLUMNS = ("raised_limit", "search", "estimate_nonmonotonic")  # near_dispatch_floor: boolean, missing
# where not derived
# never missing: "" when there is nothing to say. toolchain: the compiler environment an estimate came
# from (config `toolchains`, experiments/plan/toolchains.py); "" for published and measured rows.
TEXT_COLUMNS = ("error", "cycles_method", "vmem_method", "precision", "toolchain", "model_fit",
                "xla_estimate_method", "model_interval")

SOURCES = ("published", "estimate", "measured")  # also the table's order of sources
# toolchain_error: the toolchain's environment could not be installed (or its compiler not started);
# the row's error names the toolchain and says why.
ESTIMATE_STATUSES = ("ok", "vmem_oom", "compile_error", "timeout", "toolchain_error")
MEASURE_STATUSES = ("ok", "vmem_oom", "compile_error", "runtime_error", "wrong_result", "timeout")
PUBLISHED_STATUSES = ("ok", "failed")

# run_label names a measurement run (a machine), so two machines' measurements of a target both stay.
# toolchain: one configuration compiled by two compilers (then and now) is two rows.
KEY = ["source", "toolchain", "target", "experiment", "kernel", "dtype", "m", "k", "n", "bm", "bk", "bn",
       "vmem_limit_bytes", "run_label"]
# A configuration, whichever source and experiment it was filed under.
CONFIG = ["target", "kernel", "dtype", "m", "k", "n", "bm", "bk", "bn", "vmem_limit_bytes"]


def conform(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with exactly the table's columns, in order, and their dtypes (missing columns empty)."""
    df = df.reindex(columns=COLUMNS)
    for col in INT_COLUMNS:
        df[col] = pd.array(df[col].astype("float64"), dtype="Int64") if len(df) else df[col].astype("Int64")
    for col in FLOAT_COLUMNS:
        df[col] = df[col].astype("float64")
    return df


def frame(rows: list[dict], versions: dict) -> pd.DataFrame:
    """Rows (dicts) of one stage as a table: every column, typed, with the run's versions on each row."""
    df = pd.DataFrame(rows).reindex(columns=COLUMNS)
    for key, value in versions.items():
        df[key] = value
    df = conform(df)
    df["raised_limit"] = df["raised_limit"].astype(bool)
    df["search"] = df["search"].eq(True)
    for col in TEXT_COLUMNS:
        df[col] = df[col].astype(object).fillna("").astype(str)
    return df


class DataError(UserError, ValueError):
    """A file that cannot join the table; the message names the file, the column and the first bad row."""


# Columns a measurement file must have: the table's key, the outcome, and the raw samples.
MEASURED_REQUIRED = [*KEY, "status", "samples_s", "wall_samples_s", "timestamp"]
_TEXT = ("source", "target", "experiment", "kernel", "dtype", "status", "run_label", "timestamp")
_INTEGER = ("m", "k", "n", "bm", "bk", "bn", "vmem_limit_bytes")
MAX_DIM = 32768  # as config/schema.yaml's `dim`: no TPU holds larger operands


def check_measured(path, *, min_samples: int, max_rows: int) -> pd.DataFrame:
    """A carried measurement file, read and checked before it joins the table; raises DataError.

    Checked: it is a parquet file of at most `max_rows` rows; every required column is there with its
    type; source is "measured"; kernel, dtype and status are known; sizes are positive and blocks divide
    them; an ok row has at least `min_samples` samples per timer, every one finite and positive.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from kernels import REGISTRY

    try:
        rows = pq.ParquetFile(path).metadata.num_rows
        if rows > max_rows:
            raise DataError(f"{path}: {rows} rows, more than measure.max_carried_rows={max_rows}; "
                            "split the file or raise the limit")
        table = pq.read_table(path)
    except DataError:
        raise
    except Exception as e:  # not parquet, truncated, unreadable: pyarrow's reason, in one line
        raise DataError(f"{path}: not a readable parquet file "
                        f"({type(e).__name__}: {str(e).splitlines()[0]})") from None

    def fail(column, row, problem):
        raise DataError(f"{path}: column {column!r}, row {row}: {problem}")

    missing = [c for c in MEASURED_REQUIRED if c not in table.column_names]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}: not a measurement file of tpu-matmul-repro")
    if table.num_rows == 0:
        raise DataError(f"{path}: no rows")
    for col in _TEXT:
        if not (pa.types.is_string(table[col].type) or pa.types.is_large_string(table[col].type)):
            raise DataError(f"{path}: column {col!r} holds {table[col].type}, not text")
    for col in _INTEGER:
        kind = table[col].type
        if not (pa.types.is_integer(kind) or pa.types.is_null(kind)):
            raise DataError(f"{path}: column {col!r} holds {kind}, not whole numbers")
    for col in ("samples_s", "wall_samples_s"):
        kind = table[col].type
        if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)) or not (
                pa.types.is_floating(kind.value_type) or pa.types.is_integer(kind.value_type)
                or pa.types.is_null(kind.value_type)):
            raise DataError(f"{path}: column {col!r} holds {kind}, not lists of seconds")

    df = table.select([c for c in table.column_names if c not in ("samples_s", "wall_samples_s")]).to_pandas()
    known = {"source": ("measured",), "kernel": tuple(REGISTRY), "dtype": ("float32", "bfloat16", "int8"),
             "status": MEASURE_STATUSES}
    for col, allowed in known.items():
        bad = ~df[col].isin(allowed)
        if bad.any():
            i = int(bad.idxmax())
            fail(col, i, f"{df[col].iloc[i]!r} is not one of {list(allowed)}")
    for col in ("target", "experiment", "run_label", "timestamp"):
        bad = df[col].isna() | (df[col].astype(str).str.len() == 0)
        if bad.any():
            fail(col, int(bad.idxmax()), "empty")
    for col in ("m", "k", "n"):
        bad = df[col].isna() | (df[col] < 1) | (df[col] > MAX_DIM)
        if bad.any():
            i = int(bad.idxmax())
            fail(col, i, f"{df[col].iloc[i]} is not a size from 1 to {MAX_DIM}")
    for block, dim in (("bm", "m"), ("bk", "k"), ("bn", "n")):
        present = df[block].notna()
        bad = present & ((df[block].fillna(1) < 1) | (df[dim] % df[block].fillna(1).clip(lower=1) != 0))
        if bad.any():
            i = int(bad.idxmax())
            fail(block, i, f"{block}={int(df[block].iloc[i])} does not divide {dim}={int(df[dim].iloc[i])}")

    ok = (df.status == "ok").to_numpy()
    for col in ("samples_s", "wall_samples_s"):
        samples = table[col].combine_chunks() if table[col].num_chunks != 1 else table[col].chunk(0)
        counts = pc.fill_null(pc.list_value_length(samples), 0).to_numpy(zero_copy_only=False)
        short = ok & (counts < min_samples)
        if short.any():
            i = int(short.argmax())
            fail(col, i,
                 f"{counts[i]} samples in an ok row; at least {min_samples} (measure.samples) expected")
        values = pc.list_flatten(samples).cast(pa.float64()).to_numpy(zero_copy_only=False)
        parents = pc.list_parent_indices(samples).to_numpy(zero_copy_only=False)
        bad = ~(np.isfinite(values) & (values > 0))
        if bad.any():
            i = int(parents[bad.argmax()])
            fail(col, i, f"{float(values[bad.argmax()])} is not a positive, finite number of seconds")
    return table.to_pandas()
