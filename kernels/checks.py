"""Argument checks shared by the kernel wrappers, run before tracing so errors name the values.

No jax here: planning checks a config's blocks with these without importing it (kernels/__init__.py).
"""
import numpy as np

# Mosaic tiles the last two dims of a VMEM block by (8, 128) for 32-bit data: a block dim must be a
# multiple of that tile, or span the whole array dim.
SUBLANE = 8
LANE = 128

FLOAT_DTYPES = ("float32", "bfloat16")
INT_DTYPES = ("int8",)
DTYPES = FLOAT_DTYPES + INT_DTYPES  # every input dtype of the kernels, in the order tables list them


def dtype_name(dtype) -> str:
    return np.dtype(dtype).name


def check_operands(a, b, supported_dtypes) -> tuple[int, int, int]:
    """Return (m, k, n) for a @ b, or raise ValueError naming the offending shapes or dtypes."""
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"expected 2-D operands, got {a.shape=} and {b.shape=}")
    m, k = a.shape
    k_b, n = b.shape
    if k != k_b:
        raise ValueError(f"contracting dims differ: {a.shape=} and {b.shape=}")
    if a.dtype != b.dtype:
        raise ValueError(f"operand dtypes differ: {a.dtype=} and {b.dtype=}")
    if dtype_name(a.dtype) not in supported_dtypes:
        raise ValueError(f"dtype={dtype_name(a.dtype)!r} not supported; expected one of {supported_dtypes}")
    return m, k, n


def check_block(name: str, block: int, dim_name: str, dim: int, tile: int) -> None:
    """A block size must be positive, divide its dimension, and be a multiple of `tile` (or the whole dim)."""
    if not isinstance(block, (int, np.integer)) or isinstance(block, bool) or block <= 0:
        raise ValueError(f"{name}={block!r} must be a positive integer")
    if dim % block:
        raise ValueError(f"{name}={block} does not divide {dim_name}={dim}")
    if block != dim and block % tile:
        raise ValueError(f"{name}={block} must be a multiple of {tile} or equal {dim_name}={dim} "
                         "(TPU tiling)")


def check_blocks(m: int, k: int, n: int, bm: int, bk: int, bn: int) -> None:
    """Check (bm, bk) blocks of A, (bk, bn) of B and (bm, bn) of the output against TPU tiling."""
    check_block("bm", bm, "m", m, SUBLANE)
    # bk is the lane dim of A's block and the sublane dim of B's block: the lane tile is the stricter.
    check_block("bk", bk, "k", k, LANE)
    check_block("bn", bn, "n", n, LANE)


def check_vmem_limit(vmem_limit_bytes) -> None:
    """None keeps the compiler's default scoped-VMEM limit; otherwise a positive byte count."""
    if vmem_limit_bytes is None:
        return
    if not isinstance(vmem_limit_bytes, (int, np.integer)) or isinstance(vmem_limit_bytes, bool) \
            or vmem_limit_bytes <= 0:
        raise ValueError(f"vmem_limit_bytes={vmem_limit_bytes!r} must be a positive integer or None")


def split_blocks(m: int, k: int, n: int, splits: int) -> tuple[int, int, int]:
    """The (bm, bk, bn) blocks of an (N, N) grid of row and column slabs (v2): (m/N, k, n/N)."""
    if not isinstance(splits, int) or splits <= 0:
        raise ValueError(f"splits={splits!r} must be a positive integer")
    if m % splits:
        raise ValueError(f"splits={splits} does not divide m={m}")
    if n % splits:
        raise ValueError(f"splits={splits} does not divide n={n}")
    return m // splits, k, n // splits
