"""Correctness of every kernel on CPU: Pallas interpret mode against a float64 NumPy reference, in two
modes: "interpret" (the generic interpreter), "tpu-interpret" (simulated TPU memory, NaN buffers, races).
"""
import zlib

import numpy as np
import pandas as pd
from jax.experimental.pallas import tpu as pltpu

from tpu_matmul_repro.experiments.core.cases import Case, wrapper
from tpu_matmul_repro.experiments.core.inputs import random_operands

MODES = ("interpret", "tpu-interpret")

COLUMNS = [
    "kernel", "dtype", "m", "k", "n", "bm", "bk", "bn", "mode",
    "rel_error", "tolerance", "passed", "races_found", "error",
]


def relative_error(out: np.ndarray, ref: np.ndarray) -> float:
    """Relative Frobenius error ||out - ref|| / ||ref||, in float64."""
    out = np.asarray(out, dtype=np.float64)
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


def case_seed(case: Case) -> int:
    """A stable seed per case, so reruns see the same inputs and different cases different ones."""
    return zlib.crc32(case.label().encode())


def interpret_arg(mode: str, num_cores: int):
    if mode == "interpret":
        return True
    if mode == "tpu-interpret":
        return pltpu.InterpretParams(detect_races=True, num_cores_or_threads=num_cores)
    raise ValueError(f"mode={mode!r} unknown; expected one of {MODES}")


def _races_found(mode: str) -> bool | None:
    """Whether TPU interpret mode's race detector saw a race in the last call (None in other modes)."""
    if mode != "tpu-interpret":
        return None
    # Private API: the detector's state is only exposed as a module global (jax 0.10.2).
    from jax._src.pallas.mosaic.interpret import interpret_pallas_call

    state = interpret_pallas_call.races
    if state is None or not hasattr(state, "races_found"):
        raise RuntimeError("jax's TPU interpret mode no longer exposes `races.races_found`; "
                           "update experiments/correctness/interpret.py for this jax version")
    return bool(state.races_found)


def check_case(case: Case, mode: str, tolerances: dict, *, num_cores: int = 1, fn=None) -> dict:
    """Run one case in `mode` and compare it with float64 NumPy. `fn` overrides the wrapper (tests)."""
    fn = fn or wrapper(case.kernel)
    tolerance = float(tolerances[case.dtype])
    a, b = random_operands(case.m, case.k, case.n, case.dtype, case_seed(case))
    ref = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    row = dict(
        kernel=case.kernel, dtype=case.dtype, m=case.m, k=case.k, n=case.n,
        bm=case.bm, bk=case.bk, bn=case.bn, mode=mode, tolerance=tolerance,
        rel_error=np.nan, passed=False, races_found=None, error="",
    )
    try:
        out = np.asarray(fn(a, b, interpret=interpret_arg(mode, num_cores), **case.kwargs()))
    except Exception as e:  # a kernel that raises is a failed row, not a crashed sweep
        row["error"] = f"{type(e).__name__}: {e}"[:500]
        return row
    row["races_found"] = _races_found(mode)
    if out.shape != ref.shape:
        row["error"] = f"output shape {out.shape} != expected {ref.shape}"
        return row
    row["rel_error"] = relative_error(out, ref)
    if tolerance == 0:  # integer kernels must be exact
        ok = np.array_equal(out.astype(np.int64), ref.astype(np.int64))
    else:
        ok = bool(np.isfinite(row["rel_error"]) and row["rel_error"] <= tolerance)
    row["passed"] = bool(ok and not row["races_found"])
    return row


def run_correctness(cases_by_mode, tolerances: dict, *, num_cores: int = 1) -> pd.DataFrame:
    """Check each (case, mode) pair; one row each, in input order."""
    rows = [check_case(c, mode, tolerances, num_cores=num_cores) for c, mode in cases_by_mode]
    df = pd.DataFrame(rows, columns=COLUMNS)
    for col in ("bm", "bk", "bn"):
        df[col] = df[col].astype("Int64")
    df["races_found"] = df["races_found"].astype("boolean")
    return df
