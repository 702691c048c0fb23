"""The tidy results table, defined once: its columns, their types, its statuses and its key.

One row per estimate, measurement or published number (`source`). Every stage that writes rows
(the compile study, the measurement harness, the published reference) and every stage that reads
them (aggregation, figures, report) takes the column list from here; `conform` gives any frame the
table's columns in order and its dtypes.
"""
import pandas as pd

COLUMNS = [
    "source", "target", "device_kind", "experiment", "kernel", "dtype", "m", "k", "n", "bm", "bk", "bn",
    "status", "vmem_bytes", "vmem_limit_bytes", "oom_limit_bytes", "raised_limit", "est_cycles", "cycles_method",
    "compute_seconds", "hbm_bytes", "hbm_seconds", "seconds", "tflops", "roofline_tflops",
    "peak_tflops", "hbm_bytes_per_s", "search", "compile_s", "error",
    # the timing model (experiments/analysis/timing_model.py): estimate rows, and measured rows beside them
    "model_device_seconds", "model_device_tflops", "model_post_seconds", "model_post_tflops", "model_fit",
    "estimate_nonmonotonic", "measured_over_model", "wall_over_model",
    # measured rows only (experiments/measure/harness.py, experiments/measure/statistics.py)
    "rel_error", "timer", "calls_per_sample", "samples_s", "wall_samples_s",
    "n_samples", "p25_seconds", "p75_seconds", "wall_seconds", "measured_over_estimate",
    "num_chips", "run_label", "timestamp",
    "jax_version", "jaxlib_version", "libtpu_version", "git_sha",
]
INT_COLUMNS = ("bm", "bk", "bn", "vmem_bytes", "vmem_limit_bytes", "oom_limit_bytes", "est_cycles", "hbm_bytes",
               "calls_per_sample", "n_samples", "num_chips")
FLOAT_COLUMNS = ("compute_seconds", "hbm_seconds", "seconds", "tflops", "roofline_tflops", "compile_s",
                 "peak_tflops", "hbm_bytes_per_s", "rel_error", "p25_seconds", "p75_seconds", "wall_seconds",
                 "measured_over_estimate", "model_device_seconds", "model_device_tflops", "model_post_seconds",
                 "model_post_tflops", "measured_over_model", "wall_over_model")
BOOL_COLUMNS = ("raised_limit", "search", "estimate_nonmonotonic")
TEXT_COLUMNS = ("error", "cycles_method", "model_fit")  # never missing: "" when there is nothing to say

SOURCES = ("published", "estimate", "measured")  # also the table's order of sources
ESTIMATE_STATUSES = ("ok", "vmem_oom", "compile_error", "timeout")
MEASURE_STATUSES = ("ok", "vmem_oom", "compile_error", "runtime_error", "wrong_result")
PUBLISHED_STATUSES = ("ok", "failed")

# run_label names a measurement run (a machine), so two machines' measurements of a target both stay.
KEY = ["source", "target", "experiment", "kernel", "dtype", "m", "k", "n", "bm", "bk", "bn",
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
    for col in ("error", "cycles_method"):
        df[col] = df[col].astype(object).fillna("").astype(str)
    return df
