"""The tidy results table, defined once: its columns, types, statuses and key, and the checks a carried
measurement file passes before it joins the table (check_measured).
"""
import dataclasses

import numpy as np
import pandas as pd

from tpu_matmul_repro.experiments.core import consistency, reading
from tpu_matmul_repro.experiments.core.runtime import UserError


@dataclasses.dataclass(frozen=True)
class Column:
    """One column of the results table: the one place its name, type, unit and meaning are written."""

    name: str
    # text, int (nullable), dim (an integer size, never missing), float, bool, boolean (nullable), samples
    kind: str
    unit: str  # "" where the value has none
    sources: tuple  # the sources whose rows fill it (SOURCES)
    meaning: str
    filled: bool = False  # text never missing: "" where a row has nothing to say (TEXT_COLUMNS)
    derived: bool = False  # recomputed by the aggregate or the timing model: a carried file's is dropped
    # the range a carried file's number is checked in: `least` for a whole-number count (>= least);
    # bound "quantity" (finite, not negative) or "error" (not negative; infinite only in a row not ok)
    least: int | None = None
    bound: str = ""


# Prediction intervals of the modelled columns (analysis/intervals.py): at these levels (%),
# <column>_lo<level> and <column>_hi<level> beside each of them.
MODELLED_COLUMNS = ("model_device_seconds", "model_post_seconds", "model_device_tflops", "model_post_tflops")
INTERVAL_LEVELS = (80, 95)
INTERVAL_COLUMNS = [f"{col}_{side}{level}" for col in MODELLED_COLUMNS for level in INTERVAL_LEVELS
                    for side in ("lo", "hi")]

SOURCES = ("published", "estimate", "measured")  # also the table's order of sources
ALL, EST, MEAS = SOURCES, ("estimate",), ("measured",)
_EST_MEAS = ("estimate", "measured")
COLUMN_SPECS = (
    Column("source", "text", "", ALL, "where the number comes from: published (the post's figures), estimate "
           "(libtpu's compiler for the target, no TPU) or measured (timed on a device)"),
    Column("toolchain", "text", "", EST, "the compiler environment an estimate comes from (config "
           "`toolchains`: the pipeline's own, or e.g. the post's jax 0.4.36 / libtpu 0.0.5); \"\" otherwise",
           filled=True),
    Column("target", "text", "", ALL, "the TPU generation (v4, v5e, v5p, v6e, 7x; cpu: measured on a CPU)"),
    Column("device_kind", "text", "", _EST_MEAS, "the device kind JAX reports for the target"),
    Column("experiment", "text", "", ALL, "the post's experiment (v1-v5) or xla, XLA's own matmul"),
    Column("kernel", "text", "", ALL, "the kernel module (kernels/) that ran"),
    Column("dtype", "text", "", ALL, "operand data type: float32, bfloat16 or int8"),
    Column("m", "dim", "", ALL, "rows of the left operand and of the output"),
    Column("k", "dim", "", ALL, "the contracted dimension"),
    Column("n", "dim", "", ALL, "columns of the right operand and of the output"),
    Column("bm", "int", "", ALL, "block rows (empty for XLA and v1)"),
    Column("bk", "int", "", ALL, "block depth along k (empty for XLA and v1)"),
    Column("bn", "int", "", ALL, "block columns (empty for XLA and v1)"),
    Column("status", "text", "", ALL, "ok, vmem_oom (the compiler's out-of-VMEM verdict), compile_error, "
           "timeout, toolchain_error (estimates); runtime_error, wrong_result (measured); failed (the post)"),
    Column("vmem_bytes", "int", "bytes", _EST_MEAS, "VMEM the compiled kernel uses (ok) or requests "
           "(vmem_oom); empty where the verdict was not compiled (vmem_method dominated)", least=0),
    Column("vmem_limit_bytes", "int", "bytes", _EST_MEAS, "the scoped-VMEM limit applied: the chip's "
           "default or a raised one (raised_limit)"),
    Column("oom_limit_bytes", "int", "bytes", _EST_MEAS, "the limit the compiler said was exceeded (the "
           "scoped limit, or the core's physical VMEM)", least=1),
    Column("post_vmem_bytes", "int", "bytes", EST, "VMEM the post's compiler (toolchain post) requested for "
           "the same configuration at the default limit: the timing model reads from it how the post's run "
           "buffered its blocks (estimated; empty without that compile)", derived=True),
    Column("raised_limit", "bool", "", _EST_MEAS, "compiled at a scoped-VMEM limit above the chip's default"),
    Column("vmem_method", "text", "", EST, "how the VMEM verdict was obtained: compiled, representative (a "
           "small grid of the same blocks), block_bound, dominated (not compiled: at least as large as a "
           "shape out of VMEM) or fits_lower_limit", filled=True),
    Column("est_cycles", "int", "cycles", EST, "libtpu's cycle estimate: a Pallas kernel's static profile "
           "(cycles_method profiled), XLA's cost model (xla_cost_model)", least=1),
    Column("cycles_method", "text", "", EST, "where est_cycles comes from, or why an ok row has none "
           "(no_static_profile, over_profile_max_steps, profiler_crashed)", filled=True),
    Column("compute_seconds", "float", "s", EST, "est_cycles / the chip's clock", bound="quantity"),
    Column("hbm_bytes", "int", "bytes", _EST_MEAS, "bytes the grid moves between HBM and VMEM, from the "
           "kernel's BlockSpecs (a block is copied only when its index changes between steps)", least=0),
    Column("hbm_seconds", "float", "s", _EST_MEAS, "hbm_bytes / the chip's HBM bandwidth", bound="quantity"),
    Column("seconds", "float", "s", ALL, "estimate: max(compute_seconds, hbm_seconds); measured: the "
           "median of the timer's samples; published: the post's time", derived=True),
    Column("tflops", "float", "TFLOP/s", ALL, "FLOPs / seconds (experiments.core.units.tflops)",
           derived=True),
    Column("roofline_tflops", "float", "TFLOP/s", _EST_MEAS, "FLOPs / max(FLOPs / peak, hbm_seconds): the "
           "most this configuration could reach", bound="quantity"),
    Column("peak_tflops", "float", "TFLOP/s", _EST_MEAS, "the chip's peak rate for the dtype",
           bound="quantity"),
    Column("hbm_bytes_per_s", "float", "bytes/s", _EST_MEAS, "the chip's HBM bandwidth", bound="quantity"),
    Column("search", "bool", "", _EST_MEAS, "a configuration of the block search, not one the post ran"),
    Column("compile_s", "float", "s", _EST_MEAS, "time the compile took here (not a result)",
           bound="quantity"),
    Column("error", "text", "", ALL, "the compiler's or runtime's message, shortened; \"\" when none",
           filled=True),
    Column("model_device_seconds", "float", "s", _EST_MEAS, "the timing model's device time of one call, "
           "fitted to the post's published v5e numbers (modelled)", derived=True),
    Column("model_device_tflops", "float", "TFLOP/s", _EST_MEAS, "FLOPs / model_device_seconds (modelled)",
           derived=True),
    Column("model_post_seconds", "float", "s", _EST_MEAS, "the timing model timed as the post did: one "
           "blocked call, host overhead included (modelled)", derived=True),
    Column("model_post_tflops", "float", "TFLOP/s", _EST_MEAS, "FLOPs / model_post_seconds (modelled)",
           derived=True),
    Column("model_fit", "text", "", _EST_MEAS, "which fit the modelled columns come from (published v5e, or "
           "a TPU run's own measurements); model only where a Pallas row has no compiler cycles",
           filled=True, derived=True),
    Column("estimate_nonmonotonic", "bool", "", EST, "an XLA estimate whose TFLOP/s falls as the size grows "
           "(FLOP per byte rises): a cost-model artefact", derived=True),
    Column("measured_over_model", "float", "", MEAS, "device time / modelled device time", derived=True),
    Column("wall_over_model", "float", "", MEAS, "blocked-call time / modelled post-method time",
           derived=True),
    Column("xla_estimate_method", "text", "", EST, "what an XLA estimate's modelled columns rest on: "
           "cost_model (libtpu's cycles) or monotone_envelope (a flagged dip replaced by the best smaller "
           "problem's rate at the same aspect; the raw estimate keeps est_cycles and tflops)",
           filled=True, derived=True),
    *(Column(name, "float", "TFLOP/s" if "tflops" in name else "s", _EST_MEAS,
             f"the {name.rsplit('_', 1)[1][2:]} % prediction interval's "
             f"{'lower' if '_lo' in name else 'upper'} end of {name.rsplit('_', 1)[0]} (split conformal "
             "over the leave-one-experiment-out errors; modelled)",
             derived=True) for name in INTERVAL_COLUMNS),
    Column("model_interval", "text", "", _EST_MEAS, "how the row's intervals were made, and that no "
           "measurement checks them off v5e", filled=True, derived=True),
    Column("rel_error", "float", "", MEAS, "relative Frobenius error of the output against a float32 "
           "HIGHEST reference (int8: exact)", bound="error"),
    Column("max_tile_error", "float", "", MEAS, "the largest per-tile error over 128x128 output tiles, "
           "relative to the scale of a correct product's rounding error", bound="error"),
    Column("precision", "text", "", _EST_MEAS, "estimates: the precision the dot is compiled at "
           "(DEFAULT, or HIGHEST for xla_highest); measured float32 rows: the arithmetic the error band "
           "implies (bf16, bf16_3x, float32)", filled=True),
    Column("timer", "text", "", MEAS, "where seconds comes from: profiler_device_events or "
           "batched_async_calls"),
    Column("calls_per_sample", "int", "", MEAS, "calls per batch of samples_s", least=1),
    Column("device_samples_s", "samples", "s", MEAS, "raw samples: the kernel's own time on the device per "
           "call, from profiler device events (primary)"),
    Column("samples_s", "samples", "s", MEAS, "raw samples: batches of back-to-back asynchronous calls, per "
           "call (an upper bound: dispatch cannot be beaten)"),
    Column("wall_samples_s", "samples", "s", MEAS, "raw samples: single blocked calls, as the post timed"),
    Column("dispatch_floor_s", "float", "s", MEAS, "this run's dispatch time per call on a trivial op",
           bound="quantity"),
    Column("n_samples", "int", "", MEAS, "samples behind seconds", derived=True),
    Column("p25_seconds", "float", "s", MEAS, "25th percentile of the timer's samples", derived=True),
    Column("p75_seconds", "float", "s", MEAS, "75th percentile of the timer's samples", derived=True),
    Column("batched_seconds", "float", "s", MEAS, "median of samples_s", derived=True),
    Column("wall_seconds", "float", "s", MEAS, "median of wall_samples_s", derived=True),
    Column("near_dispatch_floor", "boolean", "", MEAS, "batched_seconds < 2 x dispatch_floor_s: the batched "
           "timer measured dispatch, not the kernel", derived=True),
    Column("measured_over_estimate", "float", "", MEAS, "seconds / this run's estimated seconds for the same "
           "target and configuration", derived=True),
    Column("num_chips", "int", "", MEAS, "chips of the measuring host", least=1),
    Column("num_devices", "int", "", MEAS, "JAX devices of the measuring host (a 7x chip is two)", least=1),
    Column("run_label", "text", "", MEAS, "the measurement run (a machine), so two machines' runs both stay"),
    Column("timestamp", "text", "", MEAS, "when the measurement ran (UTC, ISO 8601)"),
    Column("jax_version", "text", "", _EST_MEAS, "jax of the row's toolchain"),
    Column("jaxlib_version", "text", "", _EST_MEAS, "jaxlib of the row's toolchain"),
    Column("libtpu_version", "text", "", _EST_MEAS, "libtpu of the row's toolchain"),
    Column("git_sha", "text", "", _EST_MEAS, "the commit of this repository that made the row"),
)
COLUMNS = [c.name for c in COLUMN_SPECS]
_OF_KIND = {kind: tuple(c.name for c in COLUMN_SPECS if c.kind == kind)
            for kind in ("text", "int", "dim", "float", "bool", "boolean", "samples")}
INT_COLUMNS, FLOAT_COLUMNS = _OF_KIND["int"], _OF_KIND["float"]
# A measured row's raw samples (lists of seconds): readers after the aggregate, which derives their
# statistics, leave them out (analysis/runs.py).
SAMPLE_COLUMNS = _OF_KIND["samples"]
# never missing: "" when there is nothing to say (the key's text columns are filled by every source).
TEXT_COLUMNS = tuple(c.name for c in COLUMN_SPECS if c.filled)
_KIND = {c.name: c.kind for c in COLUMN_SPECS}
# toolchain_error: the toolchain's environment could not be installed (or its compiler not started);
# the row's error names the toolchain and says why.
ESTIMATE_STATUSES = ("ok", "vmem_oom", "compile_error", "timeout", "toolchain_error")
MEASURE_STATUSES = ("ok", "vmem_oom", "compile_error", "runtime_error", "wrong_result", "timeout")

# run_label names a measurement run (a machine), so two machines' measurements of a target both stay.
# toolchain: one configuration compiled by two compilers (the post's and today's) is two rows.
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
# the text and whole-number columns of a measurement file that _check_values checks row by row (a
# measured row's toolchain is "" or missing: the aggregate gives it "")
_TEXT = tuple(c for c in MEASURED_REQUIRED if _KIND[c] == "text" and c != "toolchain")
_INTEGER = tuple(c for c in MEASURED_REQUIRED if _KIND[c] in ("int", "dim"))
MAX_DIM = 32768  # as config/schema.yaml's `dim`: no TPU holds larger operands
MAX_SAMPLE_S = 7200.0  # as config/schema.yaml's measure.timeout_s: no sample outlasts its job
# Every number a carried row holds has a range (its spec's least or bound; tests/test_carried.py keeps
# it so); the DERIVED columns are recomputed, so what a file holds there is dropped, never read.
_COUNTS = {c.name: c.least for c in COLUMN_SPECS if c.least is not None}  # whole numbers, at least this
_QUANTITIES = tuple(c.name for c in COLUMN_SPECS if c.bound == "quantity")  # finite and not negative
_ERRORS = tuple(c.name for c in COLUMN_SPECS if c.bound == "error")  # not negative; infinite if not ok
DERIVED = tuple(c.name for c in COLUMN_SPECS if c.derived)
_PATTERNS = {"target": r"[a-z0-9][a-z0-9-]*", "experiment": r"[A-Za-z0-9]+",
             "run_label": r"[A-Za-z0-9][A-Za-z0-9_.-]*"}  # target and label become file names


def check_measured(path, *, min_samples: int, max_rows: int, tolerance: dict) -> pd.DataFrame:
    """A carried measurement file read and checked, every column a later step reads, before it joins the
    table (docs/reliability.md lists each check); DataError otherwise. `tolerance`: measure.tolerance."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        reading.check_file(path, "carried file")
    except reading.ReadError as e:
        raise DataError(str(e)) from None
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

    missing = [c for c in MEASURED_REQUIRED if c not in table.column_names]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}: not a measurement file of tpu-matmul-repro")
    if table.num_rows == 0:
        raise DataError(f"{path}: no rows")
    _check_types(path, table, pa)
    df = table.select([c for c in table.column_names if c not in SAMPLE_COLUMNS]).to_pandas()
    unchecked = [c for c in _ERRORS if c not in df]
    if unchecked and (df.status == "ok").any():
        raise DataError(f"{path}: missing column(s) {unchecked}: an ok row's output check (its errors) is "
                        "part of the measurement")
    _check_values(path, df)
    problem = consistency.first_problem(df, tolerance)
    if problem:
        _fail(path, *problem)
    least = consistency.least_seconds(df)
    for col in SAMPLE_COLUMNS:
        if col in table.column_names:
            _check_samples(path, col, table[col], (df.status == "ok").to_numpy(), min_samples,
                           optional=col == "device_samples_s", least=least,
                           why_least=lambda i: consistency.describe_least(df, i))
    _check_duplicates(path, df)
    return table.to_pandas()


def _fail(path, column, row, problem):
    raise DataError(f"{path}: column {column!r}, row {row}: {problem}")


def _check_types(path, table, pa) -> None:
    def holds(col, *kinds):
        kind = table[col].type
        empty = table[col].null_count == table.num_rows  # a column of nothing (NaN) is no column
        if not (empty or pa.types.is_null(kind) or any(test(kind) for test in kinds)):
            raise DataError(f"{path}: column {col!r} holds {kind}, not {kinds_named[kinds]}")

    text, whole = (pa.types.is_string, pa.types.is_large_string), (pa.types.is_integer,)
    number, flag = (pa.types.is_floating, pa.types.is_integer), (pa.types.is_boolean,)
    lists = (pa.types.is_list, pa.types.is_large_list)
    kinds_named = {text: "text", whole: "whole numbers", number: "numbers", flag: "true/false",
                   lists: "lists of seconds"}
    of_kind = {"text": text, "int": whole, "dim": whole, "float": number, "bool": flag, "boolean": flag,
               "samples": lists}
    present = set(table.column_names)
    for col in _TEXT:
        if table[col].null_count == 0:
            holds(col, *text)  # else each empty row is named below
    for spec in COLUMN_SPECS:
        if spec.name in present and spec.name not in (*_TEXT, *DERIVED):
            holds(spec.name, *of_kind[spec.kind])
    for col in present.intersection(SAMPLE_COLUMNS):
        kind = table[col].type
        element = (*number, pa.types.is_null)
        if any(test(kind) for test in lists) and not any(test(kind.value_type) for test in element):
            raise DataError(f"{path}: column {col!r} holds {kind}, not lists of seconds")


def _check_values(path, df: pd.DataFrame) -> None:
    from tpu_matmul_repro.kernels import DECLARED
    from tpu_matmul_repro.kernels.checks import DTYPES

    def first(bad, col, problem):
        if bad.any():
            i = int(np.flatnonzero(np.asarray(bad))[0])
            _fail(path, col, i, problem(df[col].iloc[i], i))

    known = {"source": ("measured",), "kernel": tuple(DECLARED), "dtype": DTYPES,
             "status": MEASURE_STATUSES}
    for col, allowed in known.items():
        first(~df[col].isin(allowed), col, lambda v, i, a=allowed: f"{v!r} is not one of {list(a)}")
    for col in ("target", "experiment", "run_label", "timestamp"):
        first(df[col].isna() | (df[col].astype(str).str.len() == 0), col, lambda v, i: "empty")
    for col, pattern in _PATTERNS.items():
        first(~df[col].astype(str).str.fullmatch(pattern), col,
              lambda v, i, p=pattern: f"{v!r} is not a name ({p})")

    when = pd.to_datetime(df.timestamp, format="ISO8601", utc=True, errors="coerce")
    first(when.isna(), "timestamp", lambda v, i: f"{v!r} is not an ISO 8601 time")
    for col in ("m", "k", "n"):
        first(df[col].isna() | (df[col] < 1) | (df[col] > MAX_DIM), col,
              lambda v, i: f"{v} is not a size from 1 to {MAX_DIM}")
    for block, dim in (("bm", "m"), ("bk", "k"), ("bn", "n")):
        present = df[block].notna()
        bad = present & ((df[block].fillna(1) < 1) | (df[dim] % df[block].fillna(1).clip(lower=1) != 0))
        first(bad, block,
              lambda v, i, b=block, d=dim: f"{b}={int(v)} does not divide {d}={int(df[d].iloc[i])}")
    first(df.vmem_limit_bytes.notna() & (df.vmem_limit_bytes < 1), "vmem_limit_bytes",
          lambda v, i: f"{v} is not a positive number of bytes")
    for col, least in _COUNTS.items():
        if col in df:
            first(df[col].notna() & (df[col] < least), col, lambda v, i, a=least: f"{v} is less than {a}")
    ok = df.status == "ok"
    for col in (*_QUANTITIES, *_ERRORS):
        if col not in df:
            continue
        values = df[col].astype("float64")
        infinite_allowed = ~ok if col in _ERRORS else pd.Series(False, index=df.index)
        bad = (values < 0) | (np.isinf(values) & ~infinite_allowed)
        why = " (infinite only where the result is not ok)" if col in _ERRORS else ""
        first(bad, col, lambda v, i, why=why: f"{v} is not a finite number, 0 or more{why}")


def _check_samples(path, col, column, ok, min_samples, optional, least, why_least) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc

    samples = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    empty = not (pa.types.is_list(samples.type) or pa.types.is_large_list(samples.type))  # all null
    if empty:
        counts = np.zeros(len(samples), dtype=np.int64)
    else:
        counts = pc.fill_null(pc.list_value_length(samples), 0).to_numpy(zero_copy_only=False)
    short = ok & (counts < min_samples) & ((counts > 0) if optional else True)
    if short.any():
        i = int(short.argmax())
        _fail(path, col, i, f"{counts[i]} samples in an ok row; at least {min_samples} (measure.samples) "
                            "expected" + (" where the row has any" if optional else ""))
    if empty:
        return
    flat = pc.list_flatten(samples)
    values = pc.fill_null(flat.cast(pa.float64()), np.nan).to_numpy(zero_copy_only=False)
    parents = pc.list_parent_indices(samples).to_numpy(zero_copy_only=False)
    bad = ~(np.isfinite(values) & (values > 0) & (values <= MAX_SAMPLE_S))
    if bad.any():
        i = int(parents[bad.argmax()])
        _fail(path, col, i, f"{float(values[bad.argmax()])} is not a positive, finite number of seconds "
                            f"(at most {MAX_SAMPLE_S:g})")
    # a sample faster than the chip allows (least: 0 where the target has no chip) cannot be a measurement
    fast = values < least[parents] * (1 - consistency.SAME)
    if fast.any():
        i = int(parents[fast.argmax()])
        _fail(path, col, i, f"{float(values[fast.argmax()]):.3g} s is faster than physics allows: "
                            f"{why_least(i)}")


def _keys(df: pd.DataFrame) -> list[tuple]:
    """Each row's key as a tuple (missing: None; no toolchain column: "" as the aggregate gives it)."""
    key = df.reindex(columns=KEY).astype(object)
    key["toolchain"] = key["toolchain"].where(key["toolchain"].notna(), "")
    return [tuple(None if pd.isna(v) else v for v in row) for row in key.itertuples(index=False, name=None)]


def _check_duplicates(path, df: pd.DataFrame) -> None:
    if not df.reindex(columns=KEY).duplicated().any():
        return
    seen = {}
    for i, key in enumerate(_keys(df)):
        if key in seen:
            _fail(path, "run_label", i, f"the same configuration and run label as row {seen[key]} (the "
                                        f"table's key {KEY}); keep one of them")
        seen[key] = i


def check_unique_files(paths) -> None:
    """No configuration measured under one run label in two files (one file copied under two names);
    DataError naming both files and the first such row of the second."""
    import pyarrow.parquet as pq

    seen = {}  # key -> (file, row)
    for path in paths:
        names = pq.ParquetFile(path).schema_arrow.names
        df = pq.read_table(path, columns=[c for c in KEY if c in names]).to_pandas()
        for i, key in enumerate(_keys(df)):
            if key in seen:
                where, j = seen[key]
                raise DataError(f"{path}: column 'run_label', row {i}: the same configuration and run label "
                                f"as row {j} of {where}; keep one of the files (or relabel one run)")
        seen.update((key, (path, i)) for i, key in enumerate(_keys(df)))
