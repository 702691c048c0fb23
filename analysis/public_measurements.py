"""Public TPU matmul measurements (data/public_measurements.csv, described in
data/public_measurements.md): `load` reads and checks the file (seconds recomputed from the printed
value) and adds `shape_class`; as a module it prints the rows per source and generation."""
import math
import sys
from pathlib import Path

import pandas as pd

from tpu_matmul_repro.experiments.core.chips import CHIPS

DEFAULT_PATH = Path(__file__).resolve().parent.parent / "data" / "public_measurements.csv"

COLUMNS = ["source", "url", "generation", "kernel", "variant", "bm", "bk", "bn", "dtype", "out_dtype",
           "m", "k", "n", "value", "unit", "method", "dispatch_included", "settings", "locator", "quote",
           "seconds"]
GENERATIONS = tuple(CHIPS)
KERNELS = ("xla", "pallas")
DTYPES = ("bfloat16", "float32", "int8")
OUT_DTYPES = ("bfloat16", "float32", "int8", "int32")
UNITS = ("s", "ms", "us", "TFLOP/s")
DISPATCH = ("yes", "no")
TEXT_COLUMNS = ("source", "url", "variant", "method", "settings", "locator", "quote")
BLOCK_COLUMNS = ("bm", "bk", "bn")
SHAPE_COLUMNS = ("m", "k", "n")
MAX_DIM = 1 << 20  # no single matmul dimension on one chip comes near this
SHAPE_CLASSES = ("square", "llm_projection", "unaligned")
SECONDS_RTOL = 1e-9
LANE = 128


class PublicDataError(ValueError):
    """A bad value in the file: the message names the file, row, column and value."""


def seconds_from(value: float, unit: str, m: int, k: int, n: int) -> float:
    """The printed value in seconds; TFLOP/s is turned into the time of 2 m k n operations."""
    if unit == "TFLOP/s":
        return 2 * m * k * n / (value * 1e12)
    return value * {"s": 1.0, "ms": 1e-3, "us": 1e-6}[unit]


def shape_class(m: int, k: int, n: int) -> str:
    """unaligned (a dimension not a multiple of 128), square, or llm_projection (any other shape)."""
    if any(d % LANE for d in (m, k, n)):
        return "unaligned"
    return "square" if m == k == n else "llm_projection"


def _fail(path, row, column, value, why):
    where = f"row {row}" if row is not None else "header"
    raise PublicDataError(f"{path}: {where}, column {column}: {value!r}: {why}")


def _positive_int(path, row, column, text, allow_empty=False):
    if text == "" and allow_empty:
        return None
    if not text.isdigit() or int(text) <= 0 or int(text) > MAX_DIM:
        _fail(path, row, column, text, f"not an integer in 1..{MAX_DIM}")
    return int(text)


def _check_row(path, row, rec):
    for column in TEXT_COLUMNS:
        if not rec[column].strip():
            _fail(path, row, column, rec[column], "empty")
    if not rec["url"].startswith("https://"):
        _fail(path, row, "url", rec["url"], "not an https:// address")
    for column, allowed in (("generation", GENERATIONS), ("kernel", KERNELS), ("dtype", DTYPES),
                            ("out_dtype", OUT_DTYPES), ("unit", UNITS), ("dispatch_included", DISPATCH)):
        if rec[column] not in allowed:
            _fail(path, row, column, rec[column], f"not one of {', '.join(allowed)}")
    dims = [_positive_int(path, row, c, rec[c]) for c in SHAPE_COLUMNS]
    blocks = [_positive_int(path, row, c, rec[c], allow_empty=True) for c in BLOCK_COLUMNS]
    if rec["kernel"] == "xla" and any(b is not None for b in blocks):
        _fail(path, row, "bm", rec["bm"], "XLA's kernel has no blocks of ours")
    for column, block, dim in zip(BLOCK_COLUMNS, blocks, dims, strict=True):
        if block is not None and block > dim:
            _fail(path, row, column, rec[column], f"block larger than the dimension {dim}")
    try:
        value = float(rec["value"])
        stated = float(rec["seconds"])
    except ValueError as err:
        _fail(path, row, "value/seconds", f"{rec['value']} / {rec['seconds']}", f"not a number ({err})")
    if not (math.isfinite(value) and value > 0):
        _fail(path, row, "value", rec["value"], "not a positive number")
    if rec["value"] not in rec["quote"]:
        _fail(path, row, "quote", rec["quote"], f"does not contain the printed value {rec['value']}")
    derived = seconds_from(value, rec["unit"], *dims)
    if not math.isclose(stated, derived, rel_tol=SECONDS_RTOL):
        _fail(path, row, "seconds", rec["seconds"], f"is not {derived!r}, the printed value in seconds")
    if not 1e-7 < derived < 10:
        _fail(path, row, "seconds", rec["seconds"], "outside 0.1 us .. 10 s, not a single matmul")


def load(path=DEFAULT_PATH) -> pd.DataFrame:
    """The checked table: shape, block and seconds columns numeric, plus `shape_class`."""
    path = Path(path)
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise PublicDataError(f"{path}: cannot be read as a UTF-8 CSV: {err}") from err
    if list(table.columns) != COLUMNS:
        missing = [c for c in COLUMNS if c not in table.columns]
        extra = [c for c in table.columns if c not in COLUMNS]
        _fail(path, None, "columns", list(table.columns),
              f"expected {COLUMNS} in that order (missing {missing}, unexpected {extra})")
    if table.empty:
        _fail(path, None, "rows", 0, "no rows")
    for i, rec in enumerate(table.to_dict("records"), start=2):  # line 1 is the header
        _check_row(path, i, rec)
    for column in SHAPE_COLUMNS:
        table[column] = table[column].astype(int)
    for column in BLOCK_COLUMNS:
        table[column] = pd.to_numeric(table[column]).astype("Int64")
    table["seconds"] = table["seconds"].astype(float)
    table["shape_class"] = [shape_class(m, k, n) for m, k, n in zip(table.m, table.k, table.n, strict=True)]
    return table


def summary(table: pd.DataFrame) -> str:
    """Rows per source and generation, and per generation and shape class."""
    by_source = table.groupby(["source", "generation"]).size().rename("rows").reset_index()
    by_class = table.groupby(["generation", "shape_class"]).size().rename("rows").reset_index()
    return "\n".join([f"{len(table)} rows from {table.source.nunique()} sources",
                      by_source.to_string(index=False), "", by_class.to_string(index=False)])


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1:
        print("usage: python3 -m tpu_matmul_repro.analysis.public_measurements [FILE]", file=sys.stderr)
        return 2
    try:
        table = load(args[0] if args else DEFAULT_PATH)
    except PublicDataError as err:
        print(err, file=sys.stderr)
        return 2
    print(summary(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
