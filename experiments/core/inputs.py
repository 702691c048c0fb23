"""Random test operands: fresh normal values, never ones or zeros (they hide bugs and run faster)."""
import jax.numpy as jnp
import numpy as np

# int8 operands: normal values scaled so they use most of the int8 range, then clipped.
INT8_SCALE = 32.0


def random_operands(m: int, k: int, n: int, dtype: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A (m, k) and B (k, n) in `dtype`, as jax arrays, from a seeded normal distribution."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k))
    b = rng.standard_normal((k, n))
    if dtype == "int8":
        a, b = (np.clip(np.rint(x * INT8_SCALE), -127, 127) for x in (a, b))
    return jnp.asarray(a, dtype=dtype), jnp.asarray(b, dtype=dtype)
