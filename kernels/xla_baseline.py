"""The baseline: XLA's own matmul (`jnp.matmul`), as the post compared against.

Integer inputs accumulate and return int32, like v5.
"""
import jax
import jax.numpy as jnp

from tpu_matmul_repro.kernels import DECLARED
from tpu_matmul_repro.kernels.checks import check_operands
from tpu_matmul_repro.kernels.spec import KernelSpec
from tpu_matmul_repro.kernels.v5_accumulator import v5_out_dtype

SUPPORTED_DTYPES = DECLARED["xla"].dtypes


def matmul_xla(a: jax.Array, b: jax.Array, *, interpret=False) -> jax.Array:
    """C = jnp.matmul(A, B). `interpret` is accepted for a uniform signature and ignored."""
    del interpret
    check_operands(a, b, SUPPORTED_DTYPES)
    return _matmul_xla(a, b)


SPEC = KernelSpec.of(DECLARED["xla"], wrapper=matmul_xla)


@jax.jit
def _matmul_xla(a, b):
    return jnp.matmul(a, b, preferred_element_type=v5_out_dtype(a.dtype))
