"""Candidate block shapes of a problem on a chip: the MXU's width times powers of two up to the whole
(zero-padded) dimension, pruned before any compile (docs/advisor.md, "Any shape a TPU holds")."""
import dataclasses

from tpu_matmul_repro.advise.request import operand_bytes, padded
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.chips import chip
from tpu_matmul_repro.kernels.checks import LANE

PAD_LIMIT = 1 / 8  # the most padding (a share of the dimension) a candidate edge may add


@dataclasses.dataclass(frozen=True)
class Candidate:
    shape: tuple  # the problem asked, (m, k, n)
    case: Case  # the kernel's problem: the shape padded to whole blocks, and the blocks

    @property
    def padded(self) -> bool:
        return (self.case.m, self.case.k, self.case.n) != tuple(self.shape)


def edges(dim: int, width: int) -> list[int]:
    """Block edges for a dimension: width x 2^j up to the whole padded dimension (lane-wide too where no
    MXU-wide edge divides it) and the dimension itself, padding it by at most PAD_LIMIT where any does."""
    if dim <= width:
        return [dim]
    found = set()
    for w in (width, LANE) if width > LANE else (width,):
        edge = w
        while True:
            found.add(edge)
            if edge >= dim:
                break
            edge *= 2
        if any(dim % e == 0 for e in found if e % width == 0):
            break  # an MXU-wide edge divides the dimension: no lane-wide edges
    if dim % LANE == 0:  # the whole dimension as one block (an unaligned one compiles slowly, masked)
        found.add(dim)
    waste = {e: (padded(dim, e) - dim) / dim for e in found}
    least = min(waste.values())
    chosen = [e for e in found if waste[e] <= PAD_LIMIT] or [e for e in found if waste[e] == least]
    return sorted(chosen)


def candidates(kernel: str, dtype: str, shape, target: str) -> list[Candidate]:
    """Every block shape of the edges above whose padded operands fit the target's HBM."""
    m, k, n = shape
    width = chip(target).mxu_width  # the smallest block edge that keeps the MXU busy
    out = []
    for bm in edges(m, width):
        for bk in edges(k, width):
            for bn in edges(n, width):
                case = Case(kernel, dtype, padded(m, bm), padded(k, bk), padded(n, bn), bm, bk, bn)
                if operand_bytes((case.m, case.k, case.n), dtype) <= chip(target).hbm_bytes:
                    out.append(Candidate(tuple(shape), case))
    return out
