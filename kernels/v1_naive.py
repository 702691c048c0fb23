"""v1, naive: whole A, B and C in VMEM, no grid.

The post's first kernel. Every operand is one VMEM block, so VMEM use grows as (mk + kn + mn) and
the kernel stops compiling once that passes the scoped-VMEM limit (the post: above 1024).
"""
import functools

import jax
from jax.experimental import pallas as pl

from tpu_matmul_repro.kernels import DECLARED, compat
from tpu_matmul_repro.kernels.checks import check_operands, check_vmem_limit
from tpu_matmul_repro.kernels.spec import KernelSpec

SUPPORTED_DTYPES = DECLARED["v1"].dtypes


def matmul_v1_kernel(a_ref, b_ref, o_ref):
    o_ref[...] = a_ref[...] @ b_ref[...]


def matmul_v1(a: jax.Array, b: jax.Array, *, vmem_limit_bytes: int | None = None,
              interpret=False) -> jax.Array:
    """C = A @ B with whole arrays as single VMEM blocks."""
    m, _, n = check_operands(a, b, SUPPORTED_DTYPES)
    check_vmem_limit(vmem_limit_bytes)
    return _matmul_v1(a, b, out_shape=(m, n), vmem_limit_bytes=vmem_limit_bytes,
                      interpret=interpret)


SPEC = KernelSpec.of(DECLARED["v1"], wrapper=matmul_v1)


@functools.partial(jax.jit, static_argnames=["out_shape", "vmem_limit_bytes", "interpret"])
def _matmul_v1(a, b, *, out_shape, vmem_limit_bytes, interpret):
    return pl.pallas_call(
        matmul_v1_kernel,
        out_shape=jax.ShapeDtypeStruct(out_shape, a.dtype),
        compiler_params=compat.compiler_params(vmem_limit_bytes=vmem_limit_bytes),
        interpret=interpret,
    )(a, b)
