"""v2, parallel: an (N, N) grid; A split into N row blocks, B into N column blocks.

Each step holds an (m/N, k) slab of A, a (k, n/N) slab of B and an (m/N, n/N) output block, so VMEM use
shrinks with N but still grows with k: the full contraction dimension is always resident.
"""
import functools

import jax
from jax.experimental import pallas as pl

from tpu_matmul_repro.kernels import DECLARED, compat
from tpu_matmul_repro.kernels.checks import (
    check_blocks,
    check_operands,
    check_vmem_limit,
    split_blocks,
)
from tpu_matmul_repro.kernels.spec import KernelSpec, Tiling

SUPPORTED_DTYPES = DECLARED["v2"].dtypes


def matmul_v2_parallel_kernel(a_ref, b_ref, o_ref):
    o_ref[...] = a_ref[...] @ b_ref[...]


def tiling(m: int, k: int, n: int, *, splits: int) -> Tiling:
    """An (N, N) grid of (m/N, k) row slabs times (k, n/N) column slabs: the full k resident."""
    bm, bn = m // splits, n // splits
    return Tiling(grid=(splits, splits),
                  in_specs=(pl.BlockSpec((bm, k), lambda i, j: (i, 0)),
                            pl.BlockSpec((k, bn), lambda i, j: (0, j))),
                  out_spec=pl.BlockSpec((bm, bn), lambda i, j: (i, j)))


def matmul_v2(a: jax.Array, b: jax.Array, *, splits: int = 4, vmem_limit_bytes: int | None = None,
    interpret=False,) -> jax.Array:
    """C = A @ B over a (splits, splits) grid of row/column slabs."""
    m, k, n = check_operands(a, b, SUPPORTED_DTYPES)
    check_vmem_limit(vmem_limit_bytes)
    bm, bk, bn = split_blocks(m, k, n, splits)
    check_blocks(m, k, n, bm, bk, bn)
    return _matmul_v2(a, b, splits=splits, vmem_limit_bytes=vmem_limit_bytes,
                      interpret=interpret)


SPEC = KernelSpec.of(DECLARED["v2"], wrapper=matmul_v2, tiling=tiling)

@functools.partial(jax.jit, static_argnames=["splits", "vmem_limit_bytes", "interpret"])
def _matmul_v2(a, b, *, splits, vmem_limit_bytes, interpret):
    (m, k), n = a.shape, b.shape[1]
    t = tiling(m, k, n, splits=splits)
    return pl.pallas_call(
        matmul_v2_parallel_kernel,
        grid=t.grid,
        in_specs=list(t.in_specs),
        out_specs=t.out_spec,
        out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        # independent output blocks: megacore chips (v4, v5p) split them over both TensorCores
        compiler_params=compat.compiler_params(dimension_semantics=("parallel", "parallel"),
                                               vmem_limit_bytes=vmem_limit_bytes),
        interpret=interpret,
    )(a, b)
