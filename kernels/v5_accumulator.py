"""v5, low precision with a wide accumulator: v3's grid plus a VMEM scratch accumulator.

bf16 inputs accumulate in float32, cast to bf16 at the last k step (the post's kernel 5); int8 inputs
accumulate in int32 and return int32 (v5e's MXU runs int8 at twice the bf16 rate). m and n are
"parallel" grid axes (megacore chips may split them across cores), k "arbitrary" (it carries the
accumulator)."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from tpu_matmul_repro.kernels import DECLARED, compat
from tpu_matmul_repro.kernels.checks import (
    check_blocks,
    check_operands,
    check_vmem_limit,
)
from tpu_matmul_repro.kernels.spec import KernelSpec
from tpu_matmul_repro.kernels.v3_block import (
    tiling,  # v3's grid and BlockSpecs: v5 changes only where the sum is kept
)

SUPPORTED_DTYPES = DECLARED["v5"].dtypes


def matmul_v5_kernel(a_ref, b_ref, o_ref, acc_ref):
    @pl.when(pl.program_id(2) == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=acc_ref.dtype)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _write():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def accumulator_dtype(dtype) -> jnp.dtype:
    """float32 for floating inputs, int32 for integer inputs (the MXU's accumulators)."""
    return jnp.dtype(jnp.int32) if jnp.issubdtype(dtype, jnp.integer) else jnp.dtype(jnp.float32)


def v5_out_dtype(dtype) -> jnp.dtype:
    """Integers return their int32 accumulator; floats return the input dtype, as in the post."""
    return accumulator_dtype(dtype) if jnp.issubdtype(dtype, jnp.integer) else jnp.dtype(dtype)


def matmul_v5(
    a: jax.Array,
    b: jax.Array,
    *,
    bm: int = 512,
    bk: int = 1024,
    bn: int = 1024,
    vmem_limit_bytes: int | None = None,
    interpret=False,
) -> jax.Array:
    """C = A @ B over (bm, bk, bn) blocks with a float32 (or int32) VMEM accumulator."""
    m, k, n = check_operands(a, b, SUPPORTED_DTYPES)
    check_vmem_limit(vmem_limit_bytes)
    check_blocks(m, k, n, bm, bk, bn)
    return _matmul_v5(
        a, b, bm=bm, bk=bk, bn=bn, vmem_limit_bytes=vmem_limit_bytes, interpret=interpret
    )


SPEC = KernelSpec.of(DECLARED["v5"], wrapper=matmul_v5, tiling=tiling)

@functools.partial(jax.jit, static_argnames=["bm", "bk", "bn", "vmem_limit_bytes", "interpret"])
def _matmul_v5(a, b, *, bm, bk, bn, vmem_limit_bytes, interpret):
    (m, k), n = a.shape, b.shape[1]
    t = tiling(m, k, n, bm=bm, bk=bk, bn=bn)
    return pl.pallas_call(
        matmul_v5_kernel,
        grid=t.grid,
        in_specs=list(t.in_specs),
        out_specs=t.out_spec,
        out_shape=jax.ShapeDtypeStruct((m, n), v5_out_dtype(a.dtype)),
        scratch_shapes=[pltpu.VMEM((bm, bn), accumulator_dtype(a.dtype))],
        compiler_params=compat.compiler_params(
            dimension_semantics=("parallel", "parallel", "arbitrary"),
            vmem_limit_bytes=vmem_limit_bytes,
        ),
        interpret=interpret,
    )(a, b)
