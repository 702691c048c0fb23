"""What a carried measured row must agree with beyond its types: the project's names, its own status and
its chip's physics (docs/reliability.md lists each check). No jax here: the check job imports it.
"""
import re

import numpy as np
import pandas as pd

from tpu_matmul_repro.experiments.core.chips import CHIPS, target_for_device_kind
from tpu_matmul_repro.experiments.core.traffic import ITEMSIZE, OUT_ITEMSIZE
from tpu_matmul_repro.experiments.core.units import TERA, flops
from tpu_matmul_repro.kernels import DECLARED
from tpu_matmul_repro.kernels.spec import WHOLE

CPU = "cpu"  # measured on a CPU (measure.device: cpu): no chip figures, no physics bound
TARGETS = (*CHIPS, CPU)
# What the measurement harness writes (experiments/measure/harness.py and check.py; tests/test_carried.py
# keeps them equal): the timer behind `seconds`, and the arithmetic a float32 row's error implies.
TIMERS = ("", "profiler_device_events", "batched_async_calls")
PRECISIONS = ("", "float32", "bf16_3x", "bf16", "unknown")
ESTIMATE_ONLY_TEXT = ("toolchain", "vmem_method", "cycles_method")  # "" in every measured row
VERSION_COLUMNS = ("jax_version", "jaxlib_version", "libtpu_version")
# A release as pip reports it (0.10.2, 0.0.42.1, 0.5.0rc1, 0.4.36.dev20241122+abc), or provenance.py's
# "not installed"; a commit as `git rev-parse HEAD` gives it (SHA-1 or SHA-256), "-dirty" when the
# checkout had edits, or "unknown" outside git (experiments/core/provenance.py).
VERSION = r"[0-9]+(\.[0-9]+)*([._+-]?[A-Za-z0-9]+)*|not installed"
GIT_SHA = r"[0-9a-f]{7,64}(-dirty)?|unknown"
MAX_VERSION_CHARS = 64
MAX_NAME_CHARS = 64  # experiment and run_label: as measure.label (config/schema.yaml)
MAX_ERROR_CHARS = 1000  # experiments/core/compiler_output.py: ERROR_CHARS
CONTROL = r"[\x00-\x08\x0b-\x1f\x7f]"  # any control character but tab and newline
NOT_COMPILED = ("vmem_oom", "compile_error")  # statuses of a kernel that never ran (no output check)
CHIP_COLUMNS = ("peak_tflops", "hbm_bytes_per_s", "hbm_seconds", "roofline_tflops")
SAME = 1e-6  # relative: a chip figure written to a file and read back is the chip's figure


def first_problem(df: pd.DataFrame, tolerance: dict) -> tuple[str, int, str] | None:
    """(column, row, what is wrong) of the first check that fails, or None. `df` has passed the type and
    range checks of check_measured; `tolerance` is measure.tolerance (dtype -> largest tile error)."""
    for check in (_names, _text, _status, _chip_figures, _vmem):
        found = check(df, tolerance)
        if found is not None:
            return found
    return None


def least_seconds(df: pd.DataFrame) -> np.ndarray:
    """Per row, the least time one call can take on the row's chip: max(FLOPs / peak, the operands' and
    output's bytes / HBM bandwidth); 0 where the target has no chip (cpu)."""
    peak = _chip_figure(df, lambda c, dtype: c.peak_flops[dtype])
    bandwidth = _chip_figure(df, lambda c, dtype: c.hbm_bytes_per_s)
    m, k, n = (df[d].astype("float64").to_numpy() for d in ("m", "k", "n"))
    with np.errstate(invalid="ignore"):
        least = np.fmax(flops(m, k, n) / peak, least_hbm_bytes(df) / bandwidth)
    return np.nan_to_num(least, nan=0.0)


def describe_least(df: pd.DataFrame, i: int) -> str:
    """Why row i cannot be faster than least_seconds(df)[i], in numbers."""
    target, dtype = df.target.iloc[i], df.dtype.iloc[i]
    m, k, n = (int(df[d].iloc[i]) for d in ("m", "k", "n"))
    c = CHIPS[target]
    work, moved = flops(m, k, n), int(least_hbm_bytes(df.iloc[[i]])[0])
    return (f"{target}'s peak ({c.peak_flops[dtype] / TERA:g} TFLOP/s {dtype}) and HBM bandwidth "
            f"({c.hbm_bytes_per_s / 1e9:g} GB/s) allow no less than "
            f"{max(work / c.peak_flops[dtype], moved / c.hbm_bytes_per_s):.3g} s for {m}x{k}x{n} "
            f"({work:.3g} FLOP, {moved:.3g} bytes of operands and output)")


def least_hbm_bytes(df: pd.DataFrame) -> np.ndarray:
    """Bytes any kernel moves between HBM and VMEM: each operand read once, the output written once."""
    m, k, n = (df[d].astype("float64").to_numpy() for d in ("m", "k", "n"))
    size, out = _lookup(df.dtype, ITEMSIZE), _lookup(df.dtype, OUT_ITEMSIZE)
    return (m * k + k * n) * size + m * n * out


def _lookup(column: pd.Series, mapping: dict, missing=np.nan) -> np.ndarray:
    """mapping[value] for each row (`missing` where it has none), one look-up per distinct value: a
    carried file has up to 200000 rows (measure.max_carried_rows) and a handful of distinct values."""
    codes, uniques = pd.factorize(column)
    values = np.array([mapping.get(u, missing) for u in uniques] + [missing])
    return values[codes]  # code -1 (a missing value): the last entry


def _chip_figure(df: pd.DataFrame, figure) -> np.ndarray:
    """figure(chip, dtype) for each row whose target is a chip, NaN elsewhere."""
    target, targets = pd.factorize(df.target)
    dtype, dtypes = pd.factorize(df.dtype)
    values = np.array([[float(figure(CHIPS[t], d)) if t in CHIPS else np.nan for d in dtypes]
                       for t in targets], dtype="float64").reshape(len(targets), len(dtypes))
    return values[target, dtype]


def _first(bad, describe) -> tuple[int, str] | None:
    bad = np.asarray(bad, dtype=bool)
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    return i, describe(i)


def _found(column, hit):
    return None if hit is None else (column, *hit)


def _names(df: pd.DataFrame, tolerance: dict):
    targets = df.target
    hit = _first(_per_value(targets, lambda t: t not in TARGETS), lambda i: (
        f"{targets.iloc[i]!r} is not a target of this project (experiments/core/chips.py: "
        f"{sorted(CHIPS)}, or {CPU} for a CPU run)"))
    if hit:
        return ("target", *hit)
    if "device_kind" in df:
        kind, kinds = pd.factorize(df.device_kind)  # -1: no device kind given
        target, names = pd.factorize(targets)
        pair = np.where(kind < 0, -1, kind * len(names) + target)
        for code, i in zip(*np.unique(pair, return_index=True), strict=True):
            if code >= 0 and not _kind_of(kinds[kind[i]], names[target[i]]):
                bad = int(np.flatnonzero(pair == code)[0])
                expected = CHIPS[names[target[i]]].device_kind if names[target[i]] in CHIPS else CPU
                return ("device_kind", bad, f"{kinds[kind[i]]!r} is not the device kind of target "
                                            f"{names[target[i]]!r} ({expected!r})")
    blocked = _lookup(df.kernel, {name: facts.grid != WHOLE for name, facts in DECLARED.items()}).astype(bool)
    for col in ("bm", "bk", "bn"):
        given = df[col].notna().to_numpy() if col in df else np.zeros(len(df), dtype=bool)
        hit = _first(given != blocked, lambda i, col=col: (
            f"kernel {df.kernel.iloc[i]} " + ("has blocks: a row of it names bm, bk and bn" if blocked[i]
                                              else f"has no blocks, yet {col}={df[col].iloc[i]}")))
        if hit:
            return (col, *hit)
    return None


def _kind_of(kind: str, target: str) -> bool:
    """Is `kind` a device kind JAX reports for `target`? Its own name in chips.py, else jax's aliases
    ("TPU v5e" beside "TPU v5 lite"), looked up only then: that imports jax."""
    if kind == "":
        return True
    if target == CPU:
        return kind == CPU
    if kind == CHIPS[target].device_kind:
        return True
    return target_for_device_kind(kind) == target


def _per_value(column: pd.Series, bad) -> np.ndarray:
    """bad(value) for each row, asked once per distinct value; an empty row is never bad here (the
    columns that must not be empty are checked before)."""
    codes, uniques = pd.factorize(column)
    return np.array([bool(bad(str(u))) for u in uniques] + [False])[codes]


def _pattern(pattern: str, longest: int):
    compiled = re.compile(pattern)
    return lambda v: len(v) > longest or not compiled.fullmatch(v)


_CONTROL = re.compile(CONTROL)
# (column, is this value bad?, what is wrong with it): the text a measured row carries (tests/test_carried.py
# checks that every text column of the registry is here or in schema._check_values)
TEXT_CHECKS = (
    *((col, bool, lambda v, col=col: f"{v!r}: only estimates have a {col}; a measured row's is empty")
      for col in ESTIMATE_ONLY_TEXT),
    *((col, lambda v, a=allowed: v not in a, lambda v, a=allowed: f"{v!r} is not one of {list(a)}")
      for col, allowed in (("timer", TIMERS), ("precision", PRECISIONS))),
    *((col, _pattern(VERSION, MAX_VERSION_CHARS), lambda v: f"{v[:80]!r} is not a version")
      for col in VERSION_COLUMNS),
    ("git_sha", _pattern(GIT_SHA, 71), lambda v: f"{v[:80]!r} is not a commit (hex, as git rev-parse HEAD "
                                                 "gives it)"),
    *((col, lambda v: len(v) > MAX_NAME_CHARS, lambda v: f"{len(v)} characters, more than {MAX_NAME_CHARS}")
      for col in ("experiment", "run_label")),
    *((col, lambda v: _CONTROL.search(v), lambda v: f"{v[:80]!r} holds a control character")
      for col in ("error", "device_kind")),
    *((col, lambda v: len(v) > MAX_ERROR_CHARS,
       lambda v: f"{len(v)} characters, more than {MAX_ERROR_CHARS} (what a row keeps of a message)")
      for col in ("error", "device_kind")),
)


def _text(df: pd.DataFrame, tolerance: dict):
    for col, bad, why in TEXT_CHECKS:
        if col in df:
            found = _found(col, _first(_per_value(df[col], bad), lambda i, col=col, why=why: why(
                str(df[col].iloc[i]))))
            if found:
                return found
    return None


def _status(df: pd.DataFrame, tolerance: dict):
    """An ok row passed the output check it records; a vmem_oom row asked for more than its limit."""
    ok = (df.status == "ok").to_numpy()
    if ok.any():
        for col in ("rel_error", "max_tile_error"):  # both there where a row is ok (check_measured)
            values = df[col].astype("float64").to_numpy()
            found = _found(col, _first(ok & ~np.isfinite(values), lambda i, v=values: (
                f"{v[i]} in an ok row: its output check gave no finite error")))
            if found:
                return found
        limit = _lookup(df.dtype, tolerance).astype("float64")
        error = df.max_tile_error.astype("float64").to_numpy()
        found = _found("max_tile_error", _first(ok & (error > limit), lambda i: (
            f"{error[i]:g} in an ok row, over measure.tolerance.{df.dtype.iloc[i]}={limit[i]:g}: "
            "that output is wrong (status wrong_result)")))
        if found:
            return found
    never_ran = df.status.isin(NOT_COMPILED).to_numpy()  # the output check runs on a compiled kernel only
    for col in ("rel_error", "max_tile_error"):
        if col in df:
            values = df[col].astype("float64").to_numpy()
            found = _found(col, _first(never_ran & ~np.isnan(values), lambda i, v=values: (
                f"{v[i]} in a {df.status.iloc[i]} row, whose kernel never ran to be checked")))
            if found:
                return found
    if {"vmem_bytes", "oom_limit_bytes"} <= set(df):
        oom = (df.status == "vmem_oom").to_numpy()
        asked, limit = (df[c].astype("float64").to_numpy() for c in ("vmem_bytes", "oom_limit_bytes"))
        found = _found("vmem_bytes", _first(oom & (asked <= limit), lambda i: (
            f"{int(asked[i])} bytes, yet out of VMEM: no more than its limit {int(limit[i])} "
            "(oom_limit_bytes)")))
        if found:
            return found
    return None


def _chip_figures(df: pd.DataFrame, tolerance: dict):
    """The chip figures a row carries are those of experiments/core/chips.py for its target and dtype
    (a CPU has none), and its HBM traffic is at least its operands and output."""
    chip = df.target.isin(list(CHIPS)).to_numpy()
    expected = {"peak_tflops": _chip_figure(df, lambda c, d: c.peak_flops[d] / TERA),
                "hbm_bytes_per_s": _chip_figure(df, lambda c, d: c.hbm_bytes_per_s)}
    if "hbm_bytes" in df:
        hit = _first(df.hbm_bytes.astype("float64").to_numpy() < least_hbm_bytes(df), lambda i: (
            f"{int(df.hbm_bytes.iloc[i])} bytes: less than its operands and output "
            f"({int(least_hbm_bytes(df.iloc[[i]])[0])} bytes), which any kernel moves"))
        if hit:
            return ("hbm_bytes", *hit)
        moved = df.hbm_bytes.astype("float64").to_numpy()
        expected["hbm_seconds"] = moved / expected["hbm_bytes_per_s"]
        work = flops(*(df[d].astype("float64").to_numpy() for d in ("m", "k", "n")))
        with np.errstate(invalid="ignore", divide="ignore"):
            fastest = np.fmax(work / (expected["peak_tflops"] * TERA), expected["hbm_seconds"])
            expected["roofline_tflops"] = work / fastest / TERA
    for col in CHIP_COLUMNS:
        if col not in df:
            continue
        given = df[col].astype("float64").to_numpy()
        present = ~np.isnan(given)
        hit = _first(present & ~chip, lambda i, given=given: (
            f"{given[i]:g}, but target {df.target.iloc[i]!r} has no chip figures in this project"))
        if hit:
            return (col, *hit)
        if col not in expected:
            continue  # no hbm_bytes to check hbm_seconds and roofline_tflops against
        want = expected[col]
        with np.errstate(invalid="ignore"):
            differs = present & chip & ~np.isnan(want) & ~np.isclose(given, want, rtol=SAME, atol=0)
        hit = _first(differs, lambda i, given=given, want=want: (
            f"{given[i]:g}, not {df.target.iloc[i]}'s {want[i]:g} for {df.dtype.iloc[i]} "
            "(experiments/core/chips.py)"))
        if hit:
            return (col, *hit)
    return None


def _vmem(df: pd.DataFrame, tolerance: dict):
    """No limit, use or request of VMEM above the chip's physical VMEM, but a vmem_oom row's request."""
    physical = _chip_figure(df, lambda c, d: c.vmem_bytes)
    oom = (df.status == "vmem_oom").to_numpy()
    for col in ("vmem_limit_bytes", "oom_limit_bytes", "vmem_bytes"):
        if col not in df:
            continue
        values = df[col].astype("float64").to_numpy()
        over = ~np.isnan(physical) & (values > physical) & (~oom if col == "vmem_bytes" else True)
        hit = _first(over, lambda i, col=col, values=values: (
            f"{int(values[i])} bytes, more than {df.target.iloc[i]}'s physical VMEM "
            f"({int(physical[i])} bytes, {physical[i] / 2**20:g} MiB)"))
        if hit:
            return (col, *hit)
    return None
