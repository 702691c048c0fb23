"""HBM bytes a kernel moves, counted from its grid the way the Pallas TPU pipeline moves them: an input
block is copied in when its block index differs from the previous grid step's, an output block written
back when its index is about to change and after the last step (row-major order, last axis fastest)."""
import dataclasses

import numpy as np

from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.chips import chip
from tpu_matmul_repro.kernels.spec import WHOLE

# The output dtype of each input dtype: int8 inputs (v5 and XLA only) produce their int32 accumulator,
# as kernels/v5_accumulator.py's v5_out_dtype returns it; floats keep their dtype.
OUT_DTYPE = {"float32": "float32", "bfloat16": "bfloat16", "int8": "int32"}
_BYTES = {"float32": 4, "bfloat16": 2, "int8": 1, "int32": 4}
ITEMSIZE = {dtype: _BYTES[dtype] for dtype in OUT_DTYPE}
OUT_ITEMSIZE = {dtype: _BYTES[out] for dtype, out in OUT_DTYPE.items()}


def matmul_bytes(shape, dtype: str) -> int:
    """HBM bytes of A, B and C of one matmul (m, k, n)."""
    m, k, n = shape
    return (m * k + k * n) * ITEMSIZE[dtype] + m * n * OUT_ITEMSIZE[dtype]


def hbm_problem(shape, dtype: str, target: str) -> str:
    """Why a matmul of `shape` cannot run on `target` at all ("" if it can): its operands and output
    must fit in the device's HBM. The one bound on a shape the advisor takes, and the config's
    advice.shapes."""
    need, have = matmul_bytes(shape, dtype), chip(target).hbm_bytes
    if need <= have:
        return ""
    return (f"its {dtype} operands and output need {need / 2**30:.1f} GiB, more than {target}'s "
            f"{have / 2**30:.1f} GiB of HBM")


def out_itemsize(case: Case) -> int:
    return OUT_ITEMSIZE[case.dtype]


def _grid_indices(grid: tuple[int, ...]) -> np.ndarray:
    """All grid points in iteration order, shape (steps, len(grid))."""
    return np.stack(np.unravel_index(np.arange(int(np.prod(grid))), grid), axis=1)


def _changes(block_index: np.ndarray) -> int:
    """How many steps start a new block: the first step, plus each step whose index differs."""
    return 1 + int(np.any(block_index[1:] != block_index[:-1], axis=1).sum())


def block_index_maps(case: Case):
    """Block index of A, B and the output at each grid point, from the kernel's own BlockSpecs (its
    SPEC's tiling): each map takes the grid points, shape (steps, len(grid)), and returns the block
    indices, shape (steps, 2)."""
    tiling = case.spec.tiling(case.m, case.k, case.n, **case.kwargs())

    def as_map(block_spec):
        def index(g):
            return np.stack(np.broadcast_arrays(*block_spec.index_map(*g.T)), axis=1)
        return index

    return tuple(as_map(spec) for spec in (*tiling.in_specs, tiling.out_spec))


def operand_bytes(case: Case) -> int:
    """The bytes of the two operands, A (m x k) and B (k x n)."""
    return ITEMSIZE[case.dtype] * (case.m * case.k + case.k * case.n)


def hbm_bytes(case: Case) -> int:
    """Bytes read from and written to HBM by one call of the kernel.

    v1 and XLA's matmul: each operand once, the minimum any kernel can move.
    """
    s = ITEMSIZE[case.dtype]
    out_s = out_itemsize(case)
    if case.facts.grid == WHOLE:
        return operand_bytes(case) + case.m * case.n * out_s
    g = _grid_indices(case.grid())
    a_map, b_map, o_map = block_index_maps(case)
    a_blocks, b_blocks, o_blocks = _changes(a_map(g)), _changes(b_map(g)), _changes(o_map(g))
    return (a_blocks * case.bm * case.bk * s + b_blocks * case.bk * case.bn * s
            + o_blocks * case.bm * case.bn * out_s)


def step_bytes(case: Case) -> tuple[np.ndarray, np.ndarray]:
    """Per grid step: bytes copied in before the step, and bytes written back after it.

    The same index-change rule as hbm_bytes, step by step (their sums are hbm_bytes): an input block
    is copied in at the first step and whenever its index changes; the output block is written back
    after the last step of each output tile. A kernel without a grid (v1) is one step.
    """
    s, out_s = ITEMSIZE[case.dtype], out_itemsize(case)
    if not case.facts.pallas:
        raise ValueError(f"kernel={case.kernel!r} has no Pallas grid: its traffic is hbm_bytes alone")
    if case.facts.grid == WHOLE:
        return np.array([operand_bytes(case)]), np.array([case.m * case.n * out_s])
    g = _grid_indices(case.grid())
    a_map, b_map, o_map = block_index_maps(case)

    def new_block(index):  # True where a step starts a block not resident at the previous step
        return np.concatenate([[True], np.any(index[1:] != index[:-1], axis=1)])

    a, b, o = a_map(g), b_map(g), o_map(g)
    bytes_in = new_block(a) * (case.bm * case.bk * s) + new_block(b) * (case.bk * case.bn * s)
    last_of_tile = np.concatenate([np.any(o[1:] != o[:-1], axis=1), [True]])
    bytes_out = (last_of_tile * (case.bm * case.bn * out_s)).astype(np.int64)
    return bytes_in.astype(np.int64), bytes_out


@dataclasses.dataclass(frozen=True)
class Windows:
    """A Pallas grid's copies summarised for the timing model: step s waits on its window W_s, what
    step s+1 copies in plus the output block step s-1 wrote back (traffic_cache keeps these on disk)."""

    steps: int
    prologue_bytes: int  # copied in before the first step
    epilogue_bytes: int  # written back after the last
    window_bytes: tuple[int, ...]  # the distinct windows W ...
    window_counts: tuple[int, ...]  # ... how many steps have each
    window_dmas: tuple[int, ...]  # ... and the DMAs each issues (blocks copied in, output blocks written)
    total_bytes: int  # hbm_bytes: every copy in and out
    dmas: int  # every DMA of the call


def step_dmas(case: Case, bytes_in: np.ndarray, bytes_out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per step: DMAs copying blocks in (0, 1 or 2, read off step_bytes: A's and B's blocks each
    differ from their sum) and write-backs (0 or 1). A kernel without a grid copies both operands."""
    if case.facts.grid == WHOLE:
        return np.array([2]), np.array([1])
    both = (case.bm * case.bk + case.bk * case.bn) * ITEMSIZE[case.dtype]
    return np.select([bytes_in == 0, bytes_in == both], [0, 2], 1), (bytes_out > 0).astype(np.int64)


def windows(case: Case) -> Windows:
    """step_bytes summarised as the timing model reads them."""
    bytes_in, bytes_out = step_bytes(case)
    dmas_in, dmas_out = step_dmas(case, bytes_in, bytes_out)
    window = np.zeros(len(bytes_in), dtype=np.int64)
    window[:-1] += bytes_in[1:]  # step s prefetches step s+1's new blocks
    window[1:] += bytes_out[:-1]  # and writes back what step s-1 finished
    dmas = np.zeros(len(bytes_in), dtype=np.int64)
    dmas[:-1] += dmas_in[1:]
    dmas[1:] += dmas_out[:-1]
    pairs, counts = np.unique(np.stack([window, dmas], axis=1), axis=0, return_counts=True)
    return Windows(steps=len(bytes_in), prologue_bytes=int(bytes_in[0]), epilogue_bytes=int(bytes_out[-1]),
                   window_bytes=tuple(int(v) for v in pairs[:, 0]),
                   window_counts=tuple(int(c) for c in counts),
                   window_dmas=tuple(int(d) for d in pairs[:, 1]),
                   total_bytes=int(bytes_in.sum() + bytes_out.sum()),
                   dmas=int(dmas_in.sum() + dmas_out.sum()))


def min_vmem_bytes(case: Case) -> int:
    """A lower bound on the VMEM a Pallas kernel needs: one buffer of each block (the pipeline
    double-buffers most of them, and the compiler adds scratch), plus v5's accumulator."""
    s, out_s = ITEMSIZE[case.dtype], out_itemsize(case)
    if case.facts.grid == WHOLE:
        return operand_bytes(case) + case.m * case.n * out_s
    acc = case.bm * case.bn * 4 if case.facts.accumulator else 0
    return (case.bm * case.bk + case.bk * case.bn) * s + case.bm * case.bn * out_s + acc
