"""The correctness check itself: it passes the real kernels and catches broken ones."""
import jax
import jax.numpy as jnp
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.correctness.interpret import check_case, run_correctness
from tpu_matmul_repro.kernels.v3_block import matmul_v3_block_kernel
from tpu_matmul_repro.kernels.v5_accumulator import matmul_v5_kernel

CASE = Case("v3", "float32", 256, 512, 384, 128, 128, 128)


def blocked_call(kernel, a_index_map, *, semantics=None, accumulator=False):
    """A v3/v5-style pallas_call with a chosen A index map and grid semantics (to break on purpose)."""

    def fn(a, b, *, bm, bk, bn, interpret):
        (m, k), n = a.shape, b.shape[1]
        return pl.pallas_call(
            kernel,
            grid=(m // bm, n // bn, k // bk),
            in_specs=[pl.BlockSpec((bm, bk), a_index_map), pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
            out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
            scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)] if accumulator else [],
            compiler_params=pltpu.CompilerParams(dimension_semantics=semantics),
            interpret=interpret,
        )(a, b)

    return fn


def accumulate_without_init(a_ref, b_ref, o_ref):
    o_ref[...] += a_ref[...] @ b_ref[...]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["interpret", "tpu-interpret"])
def test_real_kernel_passes(mode, tolerances):
    row = check_case(CASE, mode, tolerances, num_cores=2)
    assert row["passed"], row
    assert row["rel_error"] < 1e-6


@pytest.mark.parametrize("mode", ["interpret", "tpu-interpret"])
def test_wrong_index_map_is_caught(mode, tolerances):
    broken = blocked_call(matmul_v3_block_kernel, lambda i, j, kk: (i, 0))  # always A's first k block
    row = check_case(CASE, mode, tolerances, fn=broken)
    assert not row["passed"]
    assert row["rel_error"] > 0.1


def test_missing_init_is_caught(tolerances):
    broken = blocked_call(accumulate_without_init, lambda i, j, kk: (i, kk))
    row = check_case(CASE, "tpu-interpret", tolerances, fn=broken)
    assert not row["passed"]


@pytest.mark.slow
def test_parallel_k_axis_is_caught_only_by_tpu_interpret(tolerances):
    # Marking the reduction axis "parallel" lets two cores each keep a partial accumulator: plain
    # interpret mode runs the grid in order and cannot see it, TPU interpret mode with 2 cores does.
    broken = blocked_call(matmul_v5_kernel, lambda i, j, kk: (i, kk),
                          semantics=("parallel",) * 3, accumulator=True)
    assert check_case(CASE, "interpret", tolerances, fn=broken)["passed"]
    assert not check_case(CASE, "tpu-interpret", tolerances, num_cores=2, fn=broken)["passed"]


def test_kernel_that_raises_becomes_a_failed_row(tolerances):
    def raises(a, b, **_):
        raise RuntimeError("boom")

    row = check_case(CASE, "interpret", tolerances, fn=raises)
    assert not row["passed"] and "RuntimeError: boom" in row["error"]


def test_int8_requires_exact_equality(tolerances):
    case = Case("v5", "int8", 128, 256, 128, 128, 128, 128)

    def off_by_one(a, b, **kwargs):
        return jnp.matmul(a, b, preferred_element_type=jnp.int32).at[0, 0].add(1)

    assert check_case(case, "interpret", tolerances)["passed"]
    row = check_case(case, "interpret", tolerances, fn=off_by_one)
    assert not row["passed"] and 0 < row["rel_error"] < 1e-6  # tiny error, still a failure


@pytest.mark.slow
def test_table_has_one_row_per_case_and_mode(tolerances):
    cases = [(CASE, "interpret"), (CASE, "tpu-interpret"),
             (Case("v1", "bfloat16", 128, 256, 384), "interpret")]
    df = run_correctness(cases, tolerances)
    assert len(df) == 3 and df.passed.all()
    assert {"kernel", "dtype", "m", "k", "n", "bm", "bk", "bn", "mode", "rel_error", "tolerance",
            "passed"} <= set(df.columns)
    assert df.bm.isna().tolist() == [False, False, True]
