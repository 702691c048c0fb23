"""The few Pallas TPU names that differ between the jax releases the project compiles with.

The same kernels run under the project's own jax (requirements.txt) and under older toolchains
(config `toolchains`, e.g. the post's jax 0.4.36 of December 2024). Only what differs lives here,
each with the release that changed it, so a kernel reads as the post wrote it.
"""
from jax.experimental.pallas import tpu as pltpu


def compiler_params_class():
    """Mosaic's compiler parameters: `pltpu.CompilerParams` in the project's jax (0.10.2, which no
    longer has the old name), `pltpu.TPUCompilerParams` in jax 0.4.36 (which has only that one)."""
    cls = getattr(pltpu, "CompilerParams", None) or getattr(pltpu, "TPUCompilerParams", None)
    if cls is None:
        import jax

        raise ImportError(f"jax {jax.__version__}: neither pltpu.CompilerParams nor pltpu.TPUCompilerParams "
                          "exists; kernels/compat.py does not know this release")
    return cls


def compiler_params(**kwargs):
    """`compiler_params=` for `pl.pallas_call`, e.g. compiler_params(vmem_limit_bytes=...)."""
    return compiler_params_class()(**kwargs)

