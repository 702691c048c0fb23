"""Candidate block shapes of a problem on a chip, pruned before any compile as the compile study
prunes: blocks must divide the problem and be multiples of the MXU's width (a smaller block leaves
MXU columns idle), and blocks whose buffers alone exceed the core's VMEM are out of VMEM without a
compile (core.jobs.beyond_physical_vmem says why in its row)."""
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.chips import chip
from tpu_matmul_repro.kernels.checks import LANE

LARGEST = 2048  # larger block edges need more VMEM than any generation's default scoped limit


def edges(dim: int, width: int) -> list[int]:
    """Block edges for a dimension: width x 2^j up to LARGEST that divide it, or the dimension itself
    when it is smaller than the width."""
    if dim <= width:
        return [dim]
    out, edge = [], width
    while edge <= min(dim, LARGEST):
        if dim % edge == 0:
            out.append(edge)
        edge *= 2
    # a dimension no MXU-wide block divides (384 on v6e): lane-wide blocks, as the kernels allow
    return out or (edges(dim, LANE) if width > LANE else [])


def candidates(kernel: str, dtype: str, shape, target: str) -> list[Case]:
    m, k, n = shape
    width = chip(target).mxu_width  # the smallest block edge that keeps the MXU busy
    return [Case(kernel, dtype, m, k, n, bm, bk, bn)
            for bm in edges(m, width) for bk in edges(k, width) for bn in edges(n, width)]
