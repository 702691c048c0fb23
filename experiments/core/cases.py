"""One kernel configuration (a case), how to call it, and how config sweeps expand into cases.

What differs between kernels (blocks or split counts, the grid) follows from the kernel's grid kind in
its SPEC (kernels/spec.py): nothing here names a kernel.
"""
import dataclasses
import itertools

from tpu_matmul_repro.kernels import kernel_facts, kernel_spec
from tpu_matmul_repro.kernels.checks import split_blocks
from tpu_matmul_repro.kernels.spec import BLOCKS, SPLIT


@dataclasses.dataclass(frozen=True)
class Case:
    """A kernel at one shape, dtype and block configuration.

    bm, bk, bn are None for kernels without blocks (v1, xla). A split kernel's (v2) blocks are derived
    from its split count (bm = m / N, bk = k, bn = n / N), so every kernel is keyed by the same columns.
    """

    kernel: str
    dtype: str
    m: int
    k: int
    n: int
    bm: int | None = None
    bk: int | None = None
    bn: int | None = None

    @property
    def spec(self):
        """The kernel's spec, its wrapper included (imports the kernels and jax)."""
        return kernel_spec(self.kernel)

    @property
    def facts(self):
        """The kernel's plain-data facts (kernels.DECLARED: no jax)."""
        return kernel_facts(self.kernel)

    def kwargs(self) -> dict:
        """Keyword arguments for the kernel's wrapper."""
        if self.facts.grid == SPLIT:
            return {"splits": self.m // self.bm}
        if self.bm is None:
            return {}
        return {"bm": self.bm, "bk": self.bk, "bn": self.bn}

    def grid(self) -> tuple[int, ...]:
        if self.facts.grid == SPLIT:
            return (self.m // self.bm, self.n // self.bn)
        if self.bm is None:
            return ()
        return (self.m // self.bm, self.n // self.bn, self.k // self.bk)

    def label(self) -> str:
        blocks = "" if self.bm is None else f" blocks=({self.bm},{self.bk},{self.bn})"
        return f"{self.kernel} {self.dtype} {self.m}x{self.k}x{self.n}{blocks}"


def config_label(kernel: str, m, bm, bk, bn) -> str:
    """A configuration's blocks as every table, figure and study names them, from its kernel's grid
    kind: "(512, 1024, 1024)" for a block grid, "N = 4" for a split grid (its blocks follow from the
    count), "" for a kernel without blocks (a table's missing blocks, NaN or NA, included)."""
    import pandas as pd  # here: the compile worker, which imports this module, has no pandas

    if pd.isna(bm):
        return ""
    if kernel_facts(kernel).grid == SPLIT:
        return f"N = {int(m // bm)}"
    return f"({int(bm)}, {int(bk)}, {int(bn)})"


def wrapper(kernel: str):
    return kernel_spec(kernel).wrapper


def expand(kernel: str, dtype: str, shapes, *, blocks=(), splits=()) -> list[Case]:
    """Cases of one kernel and dtype over shapes (m, k, n) and, per grid kind, blocks or splits."""
    grid = kernel_facts(kernel).grid
    cases = []
    for m, k, n in shapes:
        if grid == SPLIT:
            cases += [Case(kernel, dtype, m, k, n, *split_blocks(m, k, n, s)) for s in splits]
        elif grid == BLOCKS:
            cases += [Case(kernel, dtype, m, k, n, bm, bk, bn) for bm, bk, bn in blocks]
        else:
            cases.append(Case(kernel, dtype, m, k, n))
    return cases


def search_space(space: dict) -> list[tuple[int, int, int]]:
    """All (bm, bk, bn) in the product of a config's search lists."""
    return list(itertools.product(space["bm"], space["bk"], space["bn"]))
