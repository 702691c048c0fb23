"""v3, block: a 3-D grid (m/bm, n/bn, k/bk) accumulating into the output block.

The output block's index does not depend on the k step, so it stays resident in VMEM across the k
loop (the innermost grid axis): it is zeroed at k step 0 and each step adds one (bm, bk) @ (bk, bn)
product. Accumulation happens in the output dtype, as in the post.
"""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from tpu_matmul_repro.kernels import DECLARED, compat
from tpu_matmul_repro.kernels.checks import check_blocks, check_operands, check_vmem_limit
from tpu_matmul_repro.kernels.spec import KernelSpec, Tiling

SUPPORTED_DTYPES = DECLARED["v3"].dtypes


def matmul_v3_block_kernel(a_ref, b_ref, o_ref):
    @pl.when(pl.program_id(2) == 0)
    def _init():
        o_ref[...] = jnp.zeros_like(o_ref)

    o_ref[...] += a_ref[...] @ b_ref[...]


def tiling(m: int, k: int, n: int, *, bm: int, bk: int, bn: int) -> Tiling:
    """The (m/bm, n/bn, k/bk) grid, k innermost: the output block's index ignores kk, so it stays
    resident across the k loop."""
    return Tiling(grid=(m // bm, n // bn, k // bk),
                  in_specs=(pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                            pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))),
                  out_spec=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)))


def matmul_v3(
    a: jax.Array, b: jax.Array, *, bm: int = 128, bk: int = 128, bn: int = 128,
    vmem_limit_bytes: int | None = None, interpret=False,
) -> jax.Array:
    """C = A @ B over (bm, bk, bn) blocks, accumulating in the output."""
    m, k, n = check_operands(a, b, SUPPORTED_DTYPES)
    check_vmem_limit(vmem_limit_bytes)
    check_blocks(m, k, n, bm, bk, bn)
    return _matmul_v3(a, b, bm=bm, bk=bk, bn=bn, vmem_limit_bytes=vmem_limit_bytes,
                      interpret=interpret)


SPEC = KernelSpec.of(DECLARED["v3"], wrapper=matmul_v3, tiling=tiling)


@functools.partial(jax.jit, static_argnames=["bm", "bk", "bn", "vmem_limit_bytes", "interpret"])
def _matmul_v3(a, b, *, bm, bk, bn, vmem_limit_bytes, interpret):
    (m, k), n = a.shape, b.shape[1]
    t = tiling(m, k, n, bm=bm, bk=bk, bn=bn)
    return pl.pallas_call(
        matmul_v3_block_kernel,
        grid=t.grid,
        in_specs=list(t.in_specs),
        out_specs=t.out_spec,
        out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        # output blocks independent; k carries the sum in the output block, so it stays sequential
        compiler_params=compat.compiler_params(dimension_semantics=("parallel", "parallel", "arbitrary"),
                                               vmem_limit_bytes=vmem_limit_bytes),
        interpret=interpret,
    )(a, b)
