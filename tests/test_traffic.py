"""HBM bytes moved by each kernel's grid, against closed forms."""
import numpy as np
import pytest

from experiments.core.cases import Case
from experiments.core.traffic import hbm_bytes, step_bytes


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
