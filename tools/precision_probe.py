"""What an f32 Pallas dot with no precision set compiles to: `python3 tools/precision_probe.py [v5e]`
prints the static-profile cycles and VMEM of DEFAULT, HIGHEST and bfloat16 (docs/timing-model.md).
"""
import os
import sys
import tempfile

os.environ["JAX_PLATFORMS"] = "cpu"
os.environ["LIBTPU_INIT_ARGS"] = (f"{os.environ.get('LIBTPU_INIT_ARGS', '')} "
                                  f"--xla_jf_dump_static_llo_profile_to={tempfile.mkdtemp()}")

import jax  # noqa: E402  (after the flags: libtpu reads them when it loads)
import jax.numpy as jnp  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402
from jax.experimental import topologies  # noqa: E402
from jax.experimental.pallas import tpu as pltpu  # noqa: E402

from tpu_matmul_repro.experiments.core import compiler_output  # noqa: E402
from tpu_matmul_repro.experiments.core.chips import chip  # noqa: E402

SIZE, BLOCK = 1024, 512


def compiled(device, dtype, precision: str | None) -> tuple[int, int]:
    """(static-profile cycles, VMEM bytes) of the kernel with its dot at `precision` (None: unset)."""
    def kernel(a_ref, b_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(2) == 0)
        def _init():
            acc_ref[...] = jnp.zeros_like(acc_ref)

        # unset: no precision, as the kernels' `a_ref[...] @ b_ref[...]` (the same dot_general)
        chosen = None if precision is None else getattr(jax.lax.Precision, precision)
        acc_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32, precision=chosen)
        o_ref[...] = acc_ref[...]

    def call(a, b):
        return pl.pallas_call(
            kernel, grid=(SIZE // BLOCK,) * 3,
            in_specs=[pl.BlockSpec((BLOCK, BLOCK), lambda i, j, k: (i, k)),
                      pl.BlockSpec((BLOCK, BLOCK), lambda i, j, k: (k, j))],
            out_specs=pl.BlockSpec((BLOCK, BLOCK), lambda i, j, k: (i, j)),
            out_shape=jax.ShapeDtypeStruct((SIZE, SIZE), jnp.float32),
            scratch_shapes=[pltpu.VMEM((BLOCK, BLOCK), jnp.float32)],
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")),
        )(a, b)

    sharding = jax.sharding.SingleDeviceSharding(device)
    args = [jax.ShapeDtypeStruct((SIZE, SIZE), dtype, sharding=sharding)] * 2
    text = jax.jit(call).lower(*args).compile().as_text()
    return compiler_output.pallas_estimated_cycles(text), compiler_output.vmem_bytes_used(text)


def main(target: str = "v5e") -> None:
    device = topologies.get_topology_desc(chip(target).topology, "tpu").devices[0]
    print(f"jax {jax.__version__}, target {target}, {SIZE}^3 with {BLOCK}-blocks")
    for dtype, precision in ((jnp.float32, None), (jnp.float32, "DEFAULT"), (jnp.float32, "HIGHEST"),
                             (jnp.bfloat16, None)):
        cycles, vmem = compiled(device, dtype, precision)
        print(f"{jnp.dtype(dtype).name:9s} precision={precision or 'unset':8s} cycles={cycles} vmem={vmem}")


if __name__ == "__main__":
    main(*sys.argv[1:])
