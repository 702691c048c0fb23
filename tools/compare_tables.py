"""Compare two results tables row for row on the table's key: `python3 tools/compare_tables.py OLD NEW`
(--rtol, --ignore); exit 0 when nothing differs, 1 otherwise (docs/development.md, "Tools").
"""
import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from tpu_matmul_repro.experiments.core.schema import KEY


def same(a: pd.Series, b: pd.Series, rtol: float) -> pd.Series:
    both_missing = a.isna() & b.isna()
    if pd.api.types.is_float_dtype(a) and pd.api.types.is_float_dtype(b) and rtol:
        close = np.isclose(a.astype(float), b.astype(float), rtol=rtol, atol=0)
        return pd.Series(close, index=a.index) | both_missing
    if a.dtype == object or b.dtype == object:  # lists of samples, text
        return pd.Series([both_missing.iloc[i] or _equal(x, y)
                          for i, (x, y) in enumerate(zip(a, b, strict=True))], index=a.index)
    return (a == b).fillna(False).astype(bool) | both_missing


def _equal(x, y) -> bool:
    if isinstance(x, (list, np.ndarray)) or isinstance(y, (list, np.ndarray)):
        return np.array_equal(np.asarray(x), np.asarray(y))
    return x == y


def compare(old: pd.DataFrame, new: pd.DataFrame, ignore=(), rtol=0.0, examples=3) -> list[str]:
    key = [c for c in dict.fromkeys(KEY + ["toolchain"]) if c in old.columns and c in new.columns]
    lines = [f"{len(old)} rows before, {len(new)} after; matched on {key}"]
    merged = old.merge(new, on=key, how="outer", suffixes=("_old", "_new"), indicator=True)
    for side, label in (("left_only", "only before"), ("right_only", "only after")):
        rows = merged[merged._merge == side]
        if len(rows):
            lines.append(f"{len(rows)} rows {label}, e.g. {rows[key].head(examples).to_dict('records')}")
    both = merged[merged._merge == "both"]
    for col in [c for c in old.columns if c not in key]:
        if col not in new.columns:
            lines.append(f"column {col!r}: only before")
            continue
        differs = ~same(both[f"{col}_old"], both[f"{col}_new"], rtol)
        if differs.any():
            ignored = " (ignored)" if col in ignore else ""
            sample = both[differs].head(examples)
            pairs = [f"{r[f'{col}_old']!r} -> {r[f'{col}_new']!r}" for _, r in sample.iterrows()]
            lines.append(f"column {col!r}: {int(differs.sum())} of {len(both)} matched rows differ{ignored}, "
                         f"e.g. {'; '.join(pairs)}")
    lines += [f"column {c!r}: only after" + (" (ignored)" if c in ignore else "")
              for c in new.columns if c not in old.columns and c not in key]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--ignore", nargs="*", default=[], help="columns whose differences are expected")
    parser.add_argument("--rtol", type=float, default=0.0)
    parser.add_argument("--readable-errors", action="store_true",
                        help="pass both tables' error column through today's compiler_output.readable_error "
                             "first: a table from before a change of that function compares as written now")
    args = parser.parse_args()
    old, new = pd.read_parquet(args.old), pd.read_parquet(args.new)
    if args.readable_errors:
        from tpu_matmul_repro.experiments.core.compiler_output import readable_error

        for table in (old, new):
            table["error"] = table.error.map(readable_error, na_action="ignore")
    lines = compare(old, new, set(args.ignore), args.rtol)
    print("\n".join(lines))
    failing = [line for line in lines[1:] if not line.endswith("(ignored)") and "(ignored)," not in line]
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
