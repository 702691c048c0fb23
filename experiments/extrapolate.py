"""Predicting a large grid's estimated cycles from profiles of the same blocks on small grids.

libtpu's static profile walks every grid step (about 2 ms per step on a 2-core machine): an 8192^3
product in 128-blocks has 262,144 steps. Its cycles are nearly linear in the grid, so we fit
    cycles = c0 + c_tile * tiles + c_step * steps
(tiles: output blocks, each with its k loop's set-up and write-back; steps: grid points) on up to six
reduced problems with the same blocks and at most 4 x 2 tiles x 4 k steps, and predict the full grid.
tests/test_extrapolate.py checks predictions against full profiles (within 2 %).
"""
import dataclasses

import numpy as np

from experiments.cases import Case

TILE_COUNTS = ((1, 1), (2, 2), (4, 2))
K_STEPS = (2, 4)


def grid_counts(case: Case) -> tuple[int, int]:
    """(tiles, steps) of a case's grid."""
    grid = case.grid() or (1,)
    tiles = int(np.prod(grid[:2]))
    return tiles, int(np.prod(grid))


def reduced_cases(case: Case) -> list[Case]:
    """Small problems with the case's blocks whose grids span the fit (capped at the case's grid)."""
    grid = case.grid()
    gi, gj = grid[0], grid[1]
    gk = grid[2] if len(grid) == 3 else 1
    # v2 has one split count for both m and n, so its reduced grids stay square.
    tile_counts = [(a, a) for a, _ in TILE_COUNTS] if case.kernel == "v2" else TILE_COUNTS
    points = {(min(a, gi), min(b, gj), min(c, gk)) for a, b in tile_counts for c in K_STEPS}
    out = []
    for a, b, c in sorted(points):
        if case.kernel == "v2":  # v2's blocks span k; its grid is (splits, splits) over m and n
            out.append(dataclasses.replace(case, m=case.bm * a, n=case.bn * b))
        else:
            out.append(dataclasses.replace(case, m=case.bm * a, n=case.bn * b, k=case.bk * c))
    return out


def fit(profiles: list[tuple[Case, int]]) -> np.ndarray:
    """Least-squares (c0, c_tile, c_step) from (reduced case, cycles) pairs."""
    x = np.array([[1.0, *grid_counts(c)] for c, _ in profiles])
    y = np.array([float(cycles) for _, cycles in profiles])
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    return coef


def predict(coef: np.ndarray, case: Case) -> int:
    tiles, steps = grid_counts(case)
    return int(round(coef @ np.array([1.0, tiles, steps])))
