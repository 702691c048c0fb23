"""XLA's float32 matmul at precision=HIGHEST, which XLA emulates with several bfloat16 passes: the
baseline for a reader who wants float32 accuracy from both sides (`jnp.matmul` at DEFAULT precision,
kernels/xla_baseline.py, is one bfloat16 pass). libtpu's cost model gives its cycles, as for DEFAULT."""
import jax
import jax.numpy as jnp

from tpu_matmul_repro.kernels import DECLARED
from tpu_matmul_repro.kernels.checks import check_operands
from tpu_matmul_repro.kernels.spec import KernelSpec

SUPPORTED_DTYPES = DECLARED["xla_highest"].dtypes
PRECISION = jax.lax.Precision.HIGHEST


def matmul_xla_highest(a: jax.Array, b: jax.Array, *, interpret=False) -> jax.Array:
    """C = jnp.matmul(A, B, precision=HIGHEST). `interpret` is accepted for a uniform signature and
    ignored."""
    del interpret
    check_operands(a, b, SUPPORTED_DTYPES)
    return _matmul_xla_highest(a, b)


SPEC = KernelSpec.of(DECLARED["xla_highest"], wrapper=matmul_xla_highest)


@jax.jit
def _matmul_xla_highest(a, b):
    return jnp.matmul(a, b, precision=PRECISION, preferred_element_type=jnp.float32)
