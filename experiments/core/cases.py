"""One kernel configuration (a case), how to call it, and how config sweeps expand into cases."""
import dataclasses
import itertools

from kernels import KERNELS
from kernels.v2_parallel import v2_blocks


@dataclasses.dataclass(frozen=True)
class Case:
    """A kernel at one shape, dtype and block configuration.

    bm, bk, bn are None for kernels without blocks (v1, xla). v2's blocks are derived from its split
    count (bm = m / N, bk = k, bn = n / N), so every kernel is keyed by the same columns.
    """

    kernel: str
    dtype: str
    m: int
    k: int
    n: int
    bm: int | None = None
    bk: int | None = None
    bn: int | None = None

    def kwargs(self) -> dict:
        """Keyword arguments for the kernel's wrapper."""
        if self.kernel == "v2":
            return {"splits": self.m // self.bm}
        if self.bm is None:
            return {}
        return {"bm": self.bm, "bk": self.bk, "bn": self.bn}

    def grid(self) -> tuple[int, ...]:
        if self.kernel == "v2":
            return (self.m // self.bm, self.n // self.bn)
        if self.bm is None:
            return ()
        return (self.m // self.bm, self.n // self.bn, self.k // self.bk)

    def label(self) -> str:
        blocks = "" if self.bm is None else f" blocks=({self.bm},{self.bk},{self.bn})"
        return f"{self.kernel} {self.dtype} {self.m}x{self.k}x{self.n}{blocks}"


def wrapper(kernel: str):
    try:
        return KERNELS[kernel]
    except KeyError:
        raise ValueError(f"kernel={kernel!r} unknown; expected one of {sorted(KERNELS)}") from None


def expand(kernel: str, dtype: str, shapes, *, blocks=(), splits=()) -> list[Case]:
    """Cases of one kernel and dtype over shapes (m, k, n) and, per kernel kind, blocks or splits."""
    cases = []
    for m, k, n in shapes:
        if kernel == "v2":
            cases += [Case(kernel, dtype, m, k, n, *v2_blocks(m, k, n, s)) for s in splits]
        elif kernel in ("v1", "xla"):
            cases.append(Case(kernel, dtype, m, k, n))
        else:
            cases += [Case(kernel, dtype, m, k, n, bm, bk, bn) for bm, bk, bn in blocks]
    return cases


def search_space(space: dict) -> list[tuple[int, int, int]]:
    """All (bm, bk, bn) in the product of a config's search lists."""
    return list(itertools.product(space["bm"], space["bk"], space["bn"]))
