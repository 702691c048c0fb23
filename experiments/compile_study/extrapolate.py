"""Predicting a large grid's estimated cycles from profiles of the same blocks on small grids.

libtpu's static profile walks every grid step (milliseconds per step on a 2-core machine): an 8192^3
product in 128-blocks has 262,144 steps. On v5e and v6e its cycles are nearly linear in the grid, so
we fit
    cycles = c0 + c_tile * tiles + c_step * steps
(tiles: output blocks, each with its k loop's set-up and write-back; steps: grid points) on three
reduced problems with the same blocks and at most 2 x 2 tiles x 4 k steps (two with a single k step,
where steps = tiles), and predict the full grid. tests/test_compile_study.py checks predictions
against full profiles on v5e and v6e (within 2 %).

libtpu 0.0.52's profile of 7x is linear too, but only among grids whose operands XLA leaves in HBM:
where one fits in VMEM, XLA's memory-space assignment prefetches it there before the kernel, and the
profile counts other cycles (a small grid of a large problem would be fitted on the wrong line). So on
7x a case's full-size compile says whether XLA prefetches an operand, and where it does not, the small
grids are profiled with that prefetch off (fit_options). docs/compile-study.md gives the measured
errors (benchmarks/extrapolation.py).
"""
import csv
import dataclasses
from pathlib import Path

import numpy as np

from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.chips import chip
from tpu_matmul_repro.experiments.core.traffic import ITEMSIZE, min_vmem_bytes
from tpu_matmul_repro.kernels.spec import SPLIT

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
# ... or, fitted by rows (where a target has FIT_OPTIONS): cycles = c0 + c_row * rows + c_tile * tiles,
# on grids with more than one tile along m and n. With a single k step, A's block is the same along a
# row of tiles, so the pipeline fetches it once a row: on 7x a line through tiles alone was off by
# +12 to +13 % at 56 tiles along n, and (2, 1, 1), with a single step along n, is another kernel's
# layout; by rows, one block's grids of 16 to 224 tiles lay on the plane to the cycle.
POINTS_ONE_K_STEP_ROWS = ((2, 2, 1), (4, 2, 1), (2, 4, 1))

# (target, libtpu) -> compiler options for the small grids of a case whose full-size compile leaves
# both operands in HBM: XLA's VMEM memory-space assignment off, so that no operand of a small grid is
# prefetched into VMEM either. On 7x with libtpu 0.0.52 a prefetched operand changed the profile by 1.4
# to 4 % (and its compile took twice as long or more), and the small-grid fit was off by up to a third
# (data/extrapolation_check.csv's history); with it off, the small grids of one block lay on the line
# of grids too large to prefetch, to one cycle.
FIT_OPTIONS = {("7x", "0.0.52"): {"xla_gf_vmem_memory_space_assignment": False}}


def grid_counts(case: Case) -> tuple[int, int]:
    """(tiles, steps) of a case's grid."""
    grid = case.grid() or (1,)
    tiles = int(np.prod(grid[:2]))
    return tiles, int(np.prod(grid))


def fit_options(target: str, libtpu: str) -> dict | None:
    """FIT_OPTIONS of `target` with `libtpu`: None where the profile does not depend on the prefetch."""
    return FIT_OPTIONS.get((target, libtpu))


def never_prefetched(case: Case, target: str) -> bool:
    """Whether XLA cannot prefetch either operand of `case` into `target`'s VMEM: each, whole, beside
    the kernel's own block buffers (a lower bound on its scoped VMEM), is more than the core's physical
    VMEM. Such a case's full-size compile has nothing to say that its small grids compiled with
    fit_options do not: the same VMEM (the representative's) and no prefetch."""
    room = chip(target).vmem_bytes - min_vmem_bytes(case)
    size = ITEMSIZE[case.dtype]
    return min(size * case.m * case.k, size * case.k * case.n) > room


def reduced_cases(case: Case, by_rows: bool = False) -> list[Case]:
    """Problems with the case's blocks whose grids span the fit (capped at the case's grid); `by_rows`:
    a single k step is fitted by rows (POINTS_ONE_K_STEP_ROWS)."""
    grid = case.grid()
    gi, gj = grid[0], grid[1]
    gk = grid[2] if len(grid) == 3 else 1
    # v2 has one split count for both m and n, so its reduced grids stay square.
    base = POINTS if gk > 1 else POINTS_ONE_K_STEP_ROWS if by_rows else POINTS_ONE_K_STEP
    shape = ((a, a, c) for a, _, c in base) if case.facts.grid == SPLIT else base
    points = {(min(a, gi), min(b, gj), min(c, gk)) for a, b, c in shape}
    out = []
    for a, b, c in sorted(points):
        if case.facts.grid == SPLIT:  # v2's blocks span k; its grid is (splits, splits) over m and n
            out.append(dataclasses.replace(case, m=case.bm * a, n=case.bn * b))
        else:
            out.append(dataclasses.replace(case, m=case.bm * a, n=case.bn * b, k=case.bk * c))
    return out


def representative(case: Case, by_rows: bool = False) -> Case:
    """The largest of the case's reduced grids: the same blocks, and a single step along exactly the
    axes where the case has one, so the compiler lays out (and double-buffers) VMEM as for the case."""
    return max(reduced_cases(case, by_rows), key=lambda c: grid_counts(c)[1])


def _terms(case: Case, by_rows: bool) -> list[float]:
    tiles, steps = grid_counts(case)
    if by_rows and tiles == steps:  # a single k step: rows of tiles in place of steps (= tiles)
        return [1.0, float(case.grid()[0]), float(tiles)]
    return [1.0, float(tiles), float(steps)]


def fit(profiles: list[tuple[Case, int]], by_rows: bool = False) -> np.ndarray:
    """Least-squares (c0, c_tile, c_step), or by rows (c0, c_row, c_tile), from (reduced case, cycles)."""
    x = np.array([_terms(c, by_rows) for c, _ in profiles])
    y = np.array([float(cycles) for _, cycles in profiles])
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    return coef


def predict(coef: np.ndarray, case: Case, by_rows: bool = False) -> int:
    return int(round(coef @ np.array(_terms(case, by_rows))))


def recorded_errors(target: str, libtpu: str, path: Path | None = None) -> list[float]:
    """The fit's errors (%, prediction / full profile - 1) that benchmarks/extrapolation.py recorded for
    `target` with `libtpu` (in `path`, default CHECKED); empty where none were."""
    path = path or CHECKED
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return [float(r["error_pct"]) for r in csv.DictReader(f)
                if r["target"] == target and r["libtpu_version"] == libtpu
                and r.get("cycles_method") != "profiled"]  # profiled whole: no fit to check


def inexact(target: str, libtpu: str, path: Path | None = None) -> tuple[float, float, int] | None:
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
