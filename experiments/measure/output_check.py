"""Is a measured kernel's output right? Checked tile by tile before anything is timed, as jitted JAX on
the default device (docs/measuring.md: the check and its error scale).
"""
import math

import jax
import jax.numpy as jnp
import numpy as np

TILE = 128
HOST_TILES = 8  # tiles checked again on the host: the four corners and four random ones

# Error bands of a correct float32 matmul, by how many bf16 passes the MXU made (measured on the CPU
# backend by emulating the passes on random normal operands, tests/test_measure.py; the
# per-tile error does not grow with size because S grows with the same sqrt(k) as the error):
# one bf16 pass 2.4e-3, three passes (bf16_3x) 4.5e-6, float32 about 1e-7 (the band edges sit
# between them).
PRECISION_BANDS = (("float32", 3e-6), ("bf16_3x", 2e-4), ("bf16", 2e-2))


def _tiles(dim: int) -> int:
    return TILE if dim % TILE == 0 else dim


def _tile_sums(x: jax.Array, tm: int, tn: int) -> jax.Array:
    m, n = x.shape
    return x.reshape(m // tm, tm, n // tn, tn).sum(axis=(1, 3))


@jax.jit
def _device_check(out, a, b):
    """Non-finite count, per-tile squared error and scale, and the global Frobenius sums."""
    m, n = out.shape
    tm, tn = _tiles(m), _tiles(n)
    if jnp.issubdtype(a.dtype, jnp.integer):
        ref = jnp.matmul(a.astype(jnp.int32), b.astype(jnp.int32)).astype(jnp.float32)
        got = out.astype(jnp.float32)
        # |C - R| of an int32 result: exactness is checked on the raw difference, see below
        exact_diff = jnp.sum(out.astype(jnp.int32) != jnp.matmul(a.astype(jnp.int32), b.astype(jnp.int32)))
    else:
        ref = jnp.matmul(a.astype(jnp.float32), b.astype(jnp.float32), precision=jax.lax.Precision.HIGHEST)
        got = out.astype(jnp.float32)
        exact_diff = jnp.int32(0)
    af, bf = a.astype(jnp.float32), b.astype(jnp.float32)
    scale2 = jnp.matmul(af * af, bf * bf, precision=jax.lax.Precision.HIGHEST)
    finite = jnp.isfinite(got)
    diff2 = jnp.where(finite, (got - ref) ** 2, 0.0)
    return dict(nonfinite=jnp.sum(~finite), mismatches=exact_diff,
                tile_err2=_tile_sums(diff2, tm, tn), tile_scale2=_tile_sums(scale2, tm, tn),
                diff2=jnp.sum(diff2), ref2=jnp.sum(ref * ref))


def host_tiles(m: int, n: int, count: int = HOST_TILES, seed: int = 0) -> list[tuple[int, int]]:
    """Tile indices (row tile, column tile) to check on the host: the corners, then random ones."""
    rows, cols = m // _tiles(m), n // _tiles(n)
    corners = [(0, 0), (0, cols - 1), (rows - 1, 0), (rows - 1, cols - 1)]
    rng = np.random.default_rng(seed)
    extra = [(int(rng.integers(rows)), int(rng.integers(cols))) for _ in range(max(count - 4, 0))]
    return list(dict.fromkeys(corners + extra))[:count]


def host_tile_error(out, a, b, tile: tuple[int, int]) -> float:
    """One tile's error against float64 NumPy (int8: int64; any difference is returned as inf)."""
    m, n = out.shape
    tm, tn = _tiles(m), _tiles(n)
    rows, cols = slice(tile[0] * tm, (tile[0] + 1) * tm), slice(tile[1] * tn, (tile[1] + 1) * tn)
    got = np.asarray(out[rows, cols])
    a_t, b_t = np.asarray(a[rows, :]), np.asarray(b[:, cols])
    if np.issubdtype(a_t.dtype, np.integer):
        want = a_t.astype(np.int64) @ b_t.astype(np.int64)
        return 0.0 if np.array_equal(got.astype(np.int64), want) else math.inf
    a64, b64 = a_t.astype(np.float64), b_t.astype(np.float64)
    got64 = got.astype(np.float64)
    if not np.isfinite(got64).all():
        return math.inf
    scale = math.sqrt(float(((a64 * a64) @ (b64 * b64)).sum()))
    return float(np.linalg.norm(got64 - a64 @ b64)) / max(scale, np.finfo(np.float64).tiny)


def precision_used(max_tile_error: float, dtype: str) -> str:
    """How many bf16 passes a float32 result's error band implies ("" for other dtypes)."""
    if dtype != "float32" or not math.isfinite(max_tile_error):
        return ""
    for name, upper in PRECISION_BANDS:
        if max_tile_error <= upper:
            return name
    return "unknown"


def check(out, a, b, dtype: str, tolerance: float) -> dict:
    """rel_error, max_tile_error, precision and, when wrong, status "wrong_result" with the reason."""
    if not (math.isfinite(tolerance) and tolerance >= 0):  # every comparison with NaN is false: no check
        raise ValueError(f"tolerance={tolerance!r}: a finite number, 0 or more (the config check refuses it)")
    if out.shape != (a.shape[0], b.shape[1]):
        return dict(status="wrong_result", rel_error=math.inf, max_tile_error=math.inf, precision="",
                    error=f"output shape {out.shape} != {(a.shape[0], b.shape[1])}; not timed")
    sums = jax.device_get(_device_check(out, a, b))
    rel_error = math.sqrt(float(sums["diff2"]) / max(float(sums["ref2"]), np.finfo(np.float64).tiny))
    per_tile = np.sqrt(sums["tile_err2"].astype(np.float64)
                       / np.maximum(sums["tile_scale2"].astype(np.float64), np.finfo(np.float64).tiny))
    worst = np.unravel_index(int(np.argmax(per_tile)), per_tile.shape)
    result = dict(status="ok", error="", rel_error=rel_error, max_tile_error=float(per_tile[worst]),
                  precision="")
    wrong = []
    if int(sums["nonfinite"]):
        result["rel_error"] = result["max_tile_error"] = math.inf
        wrong.append(f"{int(sums['nonfinite'])} non-finite values in the output")
    if int(sums["mismatches"]):
        wrong.append(f"{int(sums['mismatches'])} int32 values differ from the exact product")
    if per_tile[worst] > tolerance:
        wrong.append(f"tile {tuple(int(i) for i in worst)} ({TILE}x{TILE}) has error {per_tile[worst]:.3g} "
                     f"against the operands' scale, over the tolerance {tolerance:g}")
    if not wrong:  # the reference itself checked on the host, on sampled tiles
        for tile in host_tiles(*out.shape):
            err = host_tile_error(out, a, b, tile)
            if err > tolerance:
                wrong.append(f"tile {tile} differs from the host's float64/int64 product (error {err:.3g})")
                break
    if wrong:
        result.update(status="wrong_result", error="; ".join(wrong) + "; not timed")
    else:
        result["precision"] = precision_used(result["max_tile_error"], dtype)
    return result
