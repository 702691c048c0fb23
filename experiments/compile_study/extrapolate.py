"""Predicting a large grid's estimated cycles from profiles of the same blocks on small grids.

libtpu's static profile walks every grid step (milliseconds per step on a 2-core machine): an 8192^3
product in 128-blocks has 262,144 steps. On v5e and v6e its cycles are nearly linear in the grid, so
we fit
    cycles = c0 + c_tile * tiles + c_step * steps
(tiles: output blocks, each with its k loop's set-up and write-back; steps: grid points) on three
reduced problems with the same blocks and at most 2 x 2 tiles x 4 k steps (two with a single k step,
where steps = tiles), and predict the full grid. tests/test_compile_study.py checks predictions
against full profiles on v5e and v6e (within 2 %).

libtpu 0.0.52's profile of 7x is linear too, but in two regimes set by the bytes of the two operands
(LARGE_OPERANDS): a problem past the threshold is fitted on grids past it (large_operand_grids),
whose profiles also take seconds where the small grids' below it took up to a minute.
docs/compile-study.md gives the measured errors (benchmarks/extrapolation.py).
"""
import csv
import dataclasses
import functools
from pathlib import Path

import numpy as np

from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.traffic import ITEMSIZE, operand_bytes
from tpu_matmul_repro.kernels.spec import BLOCKS, SPLIT

# benchmarks/extrapolation.py's record: full static profiles against this fit, per target and libtpu
CHECKED = Path(__file__).resolve().parents[2] / "data" / "extrapolation_check.csv"
TESTED_PCT = 2.0  # the error tests/test_compile_study.py allows on v5e and v6e

# Reduced grids (tiles along m, tiles along n, k steps): three that separate c0, c_tile and c_step,
# small enough to profile in a few seconds even for 1024-blocks (24 steps in all). The largest is the
# representative (the VMEM verdict's compile), so the fit costs two compiles more than the verdict.
POINTS = ((2, 1, 2), (1, 1, 4), (2, 2, 4))
# With a single k step, steps = tiles: a line through 2 and 8 tiles, which stay two distinct points
# when a grid of more than 16 steps caps them.
POINTS_ONE_K_STEP = ((2, 1, 1), (4, 2, 1))

# (target, libtpu) -> the bytes of A and B from which the static profile is in its large-operand
# regime. On 7x, libtpu 0.0.52's cycles per step change by up to a quarter across it, so a fit on
# grids below it was off by up to a third for problems above it (data/extrapolation_check.csv before
# large_operand_grids), and its profiles there take 10-60 s, not 1-3 s. A scan of 216 grids of one
# block shape put the jump between 21 and 22 MiB of A + B, whatever the grid's shape.
LARGE_OPERANDS = {("7x", "0.0.52"): 22 * 2**20}
# Grid extents searched for the base of a large-operand design (and each axis's full extent).
SEARCHED_EXTENT = 64
# What a profiled compile costs beside its grid steps (tracing, lowering, the worker's round trip), in
# steps: a design's cost is its grids' steps plus this for each, set against the case's own steps and
# one compile. Five 7x compiles of one block past the threshold took 0.5 s + 0.086 s a step.
COMPILE_OVERHEAD_STEPS = 6


def grid_counts(case: Case) -> tuple[int, int]:
    """(tiles, steps) of a case's grid."""
    grid = case.grid() or (1,)
    tiles = int(np.prod(grid[:2]))
    return tiles, int(np.prod(grid))


def large_operand_bytes(target: str, libtpu: str) -> int | None:
    """The threshold of LARGE_OPERANDS for `target` with `libtpu`; None where the profile has one regime."""
    return LARGE_OPERANDS.get((target, libtpu))


def reduced_cases(case: Case, large_operands: int | None = None) -> list[Case]:
    """Problems with the case's blocks whose grids span the fit (capped at the case's grid): small
    ones, or where `large_operands` (large_operand_bytes) is given and the case's operands reach it,
    large_operand_grids' (the case alone where profiling it is cheaper)."""
    if large_operands and case.facts.grid == BLOCKS and operand_bytes(case) >= large_operands:
        return large_operand_grids(case, large_operands)
    grid = case.grid()
    gi, gj = grid[0], grid[1]
    gk = grid[2] if len(grid) == 3 else 1
    # v2 has one split count for both m and n, so its reduced grids stay square.
    base = POINTS_ONE_K_STEP if gk == 1 else POINTS
    shape = ((a, a, c) for a, _, c in base) if case.facts.grid == SPLIT else base
    points = {(min(a, gi), min(b, gj), min(c, gk)) for a, b, c in shape}
    out = []
    for a, b, c in sorted(points):
        if case.facts.grid == SPLIT:  # v2's blocks span k; its grid is (splits, splits) over m and n
            out.append(dataclasses.replace(case, m=case.bm * a, n=case.bn * b))
        else:
            out.append(dataclasses.replace(case, m=case.bm * a, n=case.bn * b, k=case.bk * c))
    return out


@functools.cache  # the VMEM verdict's representative and the fit ask for it
def large_operand_grids(case: Case, threshold: int) -> list[Case]:
    """Grids of a 3-D block case whose operands reach `threshold`, for a fit in the regime of the case:
    a base grid, the same with twice its tiles along m (or n; none where the base has all of them),
    and with twice its k steps (or all; none where the base has all of them); each with more than one
    step along every axis where the case has more than one. The cheapest design (its steps, and
    COMPILE_OVERHEAD_STEPS a grid), or [case] where profiling the case whole is as cheap (as where
    only the case reaches the threshold)."""
    gi, gj, gk = case.grid()
    itemsize = ITEMSIZE[case.dtype]
    best = (grid_counts(case)[1] + COMPILE_OVERHEAD_STEPS, None)  # (cost, design): None profiles it whole
    for a in _extents(gi):
        for b in _extents(gj):
            per_k_step = itemsize * case.bk * (a * case.bm + b * case.bn)
            c = max(min(2, gk), -(-threshold // per_k_step))
            if c > gk:
                continue
            # A base with all k steps needs no k point (the case's steps are gk times its tiles too:
            # its cycles lie on the line through two tile counts), one with all tiles no tile point.
            tiles = [] if (a, b) == (gi, gj) else [(min(2 * a, gi), b, c) if a < gi
                                                    else (a, min(2 * b, gj), c)]
            points = [(a, b, c), *tiles] + ([(a, b, min(2 * c, gk))] if c < gk else [])
            cost = sum(x * y * z + COMPILE_OVERHEAD_STEPS for x, y, z in points)
            if cost < best[0]:
                best = (cost, points)
    if best[1] is None:
        return [case]
    return [dataclasses.replace(case, m=case.bm * a, n=case.bn * b, k=case.bk * c) for a, b, c in best[1]]


def _extents(full: int) -> list[int]:
    """Grid extents along an axis to search: from 2 (1 where the case has one step) to SEARCHED_EXTENT,
    and the full extent."""
    return sorted({*range(min(2, full), min(full, SEARCHED_EXTENT) + 1), full})


def verdict_at_full_size(case: Case, large_operands: int | None) -> bool:
    """Whether a 3-D block case's VMEM verdict needs a compile at its full size, not its
    representative's: where the profile has two regimes (large_operands: libtpu 0.0.52 on 7x) and the
    grid has a single k step. There its VMEM can depend on the grid's extent: of the 30 blocks of one
    advisor search of 8192x4096x14336 compiled both ways, three of the four (512, 4096, *) asked
    4.5-9.0 MiB less or more than at full size, every one with k steps the same (docs/compile-study.md;
    a plain compile costs about a second)."""
    return bool(large_operands) and case.grid()[2] == 1


def representative(case: Case, large_operands: int | None = None) -> Case:
    """The largest of the case's reduced grids: the same blocks, and a single step along exactly the
    axes where the case has one, so the compiler lays out (and double-buffers) VMEM as for the case."""
    return max(reduced_cases(case, large_operands), key=lambda c: grid_counts(c)[1])


def fit(profiles: list[tuple[Case, int]]) -> np.ndarray:
    """Least-squares (c0, c_tile, c_step) from (reduced case, cycles) pairs."""
    x = np.array([[1.0, *grid_counts(c)] for c, _ in profiles])
    y = np.array([float(cycles) for _, cycles in profiles])
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    return coef


def predict(coef: np.ndarray, case: Case) -> int:
    tiles, steps = grid_counts(case)
    return int(round(coef @ np.array([1.0, tiles, steps])))


def recorded_errors(target: str, libtpu: str, path: Path = CHECKED) -> list[float]:
    """The fit's errors (%, prediction / full profile - 1) that benchmarks/extrapolation.py recorded for
    `target` with `libtpu`; empty where none were."""
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return [float(r["error_pct"]) for r in csv.DictReader(f)
                if r["target"] == target and r["libtpu_version"] == libtpu
                and r.get("cycles_method") != "profiled"]  # profiled whole: no fit to check


def inexact(target: str, libtpu: str, path: Path = CHECKED) -> tuple[float, float, int] | None:
    """(smallest error %, largest, blocks checked) where the recorded check of `target` with `libtpu`
    found the fit off by more than TESTED_PCT for some block; None where it did not, or none is
    recorded."""
    errors = recorded_errors(target, libtpu, path)
    if not errors or not beyond_tested(errors):
        return None
    return min(errors), max(errors), len(errors)


def beyond_tested(errors: list[float]) -> bool:
    """Whether recorded errors exceed what the tests allow on v5e and v6e."""
    return max(map(abs, errors)) > TESTED_PCT


def inexact_rows(rows, target: str) -> list[tuple[str, int, tuple[float, float, int]]]:
    """(libtpu, how many of `rows` it extrapolated, inexact's range) for each libtpu of `rows` (one
    target's table rows) whose extrapolated cycles rest on an inexact recorded check."""
    hit = rows[rows.cycles_method == "extrapolated"]
    versions = hit.libtpu_version.dropna().astype(str)
    return [(libtpu, int((versions == libtpu).sum()), found) for libtpu in sorted(set(versions))
            if (found := inexact(target, libtpu))]
