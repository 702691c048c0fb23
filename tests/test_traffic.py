"""HBM bytes moved by each kernel's grid, against closed forms."""
import numpy as np
import pytest

from tpu_matmul_repro.experiments.core.cases import Case, expand
from tpu_matmul_repro.experiments.core.traffic import hbm_bytes, step_bytes
from tpu_matmul_repro.kernels import REGISTRY


@pytest.mark.parametrize("m, k, n, bm, bk, bn",
                         [(1024, 2048, 512, 128, 256, 128), (512, 512, 512, 256, 128, 512)])
def test_blocked_kernel_reloads_operands_per_output_tile(m, k, n, bm, bk, bn):
    # With k/bk > 1, every step loads a new A and B block: A is read n/bn times, B m/bm times.
    expected = 4 * (m * k * (n // bn) + k * n * (m // bm) + m * n)
    assert hbm_bytes(Case("v3", "float32", m, k, n, bm, bk, bn)) == expected


def test_single_k_step_keeps_a_resident_across_j():
    # k/bk == 1: A's block index (i, 0) is unchanged while j moves, so A is read once; B per i.
    m, k, n = 1024, 512, 1024
    case = Case("v5", "bfloat16", m, k, n, 256, 512, 256)
    assert hbm_bytes(case) == 2 * (m * k + k * n * (m // 256) + m * n)


def test_int8_output_is_int32_and_minimal_kernels_move_each_operand_once():
    assert hbm_bytes(Case("xla", "int8", 256, 512, 128)) == 256 * 512 + 512 * 128 + 4 * 256 * 128
    assert hbm_bytes(Case("v1", "float32", 256, 512, 128)) == 4 * (256 * 512 + 512 * 128 + 256 * 128)


def test_v2_reads_b_once_per_row_slab():
    m = k = n = 1024
    case = Case("v2", "float32", m, k, n, m // 4, k, n // 4)
    assert hbm_bytes(case) == 4 * (m * k + 4 * k * n + m * n)


@pytest.mark.parametrize("case", [
    Case("v3", "float32", 1024, 2048, 512, 128, 256, 128),
    Case("v5", "bfloat16", 1024, 512, 1024, 256, 512, 256),
    Case("v2", "float32", 1024, 1024, 1024, 256, 1024, 256),
    Case("v1", "float32", 256, 512, 128),
])
def test_step_bytes_add_up_to_the_grid_total(case):
    bytes_in, bytes_out = step_bytes(case)
    assert len(bytes_in) == len(bytes_out) == max(1, len(case.grid()) and int(np.prod(case.grid())))
    assert int(bytes_in.sum() + bytes_out.sum()) == hbm_bytes(case)
    if case.grid():
        tiles = case.grid()[0] * case.grid()[1]
        assert int((bytes_out > 0).sum()) == tiles  # one write-back per output tile


# --- the traffic count reads the kernel's own pallas_call ------------------------------------------

def _pallas_grid_mapping(case):
    """The grid mapping of the pallas_call that `case`'s wrapper really traces (interpret mode)."""
    import jax
    import jax.numpy as jnp

    from tpu_matmul_repro.experiments.core.cases import wrapper

    dtype = jnp.dtype(case.dtype)
    args = (jax.ShapeDtypeStruct((case.m, case.k), dtype), jax.ShapeDtypeStruct((case.k, case.n), dtype))
    traced = jax.make_jaxpr(lambda a, b: wrapper(case.kernel)(a, b, **case.kwargs(), interpret=True))(*args)

    def find(jaxpr):
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "pallas_call":
                return eqn
            for param in eqn.params.values():
                inner = getattr(param, "jaxpr", None)
                found = inner is not None and find(getattr(inner, "jaxpr", inner))
                if found:
                    return found
        return None

    return find(traced.jaxpr).params["grid_mapping"]


@pytest.mark.parametrize("kernel", [name for name, spec in REGISTRY.items() if spec.tiling is not None])
def test_traffic_uses_the_block_specs_the_kernel_traces(kernel):
    """For every registered kernel with a grid: the grid, block shapes and every block index that the
    traffic count uses are those of the pallas_call the kernel's wrapper builds."""
    import jax
    import numpy as np

    from tpu_matmul_repro.experiments.core import traffic

    spec = REGISTRY[kernel]
    dtype = spec.dtypes[0]
    shapes = [(256, 512, 512), (512, 256, 256)]
    blocks = [(128, 128, 128), (256, 128, 128)]
    cases = [c for m, k, n in shapes for c in expand(kernel, dtype, [(m, k, n)], blocks=blocks, splits=[2])]
    assert cases
    for case in cases:
        mapping = _pallas_grid_mapping(case)
        tiling = spec.tiling(case.m, case.k, case.n, **case.kwargs())
        assert tuple(mapping.grid) == tuple(tiling.grid) == case.grid()
        points = traffic._grid_indices(case.grid())
        ours = traffic.block_index_maps(case)
        specs = (*tiling.in_specs, tiling.out_spec)
        for block_mapping, block_spec, index_of in zip(mapping.block_mappings, specs, ours, strict=True):
            traced_shape = tuple(getattr(d, "block_size", d) for d in block_mapping.block_shape)
            assert traced_shape == tuple(block_spec.block_shape)
            closed = block_mapping.index_map_jaxpr
            traced = np.array([[int(x) for x in jax.core.eval_jaxpr(closed.jaxpr, closed.consts, *p.tolist())]
                               for p in points])
            assert np.array_equal(traced, index_of(points)), case
