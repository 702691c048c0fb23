"""What a kernel is: its plain facts (kernels.KERNELS) and its SPEC (those facts, its wrapper and its
tiling), so the rest of the project never lists kernels: config validation, case expansion,
HBM-traffic counting, figure labels and the report read them from the registry (kernels/__init__.py).
"""
import dataclasses
from typing import Callable

# How a kernel's wrapper is parameterised, and so how its grid and blocks follow from a configuration:
WHOLE = "whole"  # no grid: whole operands as single blocks (v1, and XLA's own matmul)
SPLIT = "split"  # an (N, N) grid of row/column slabs, the full k resident: blocks (m/N, k, n/N) (v2)
BLOCKS = "blocks"  # a 3-D (m/bm, n/bn, k/bk) grid with k innermost (v3, v5)
GRID_KINDS = (WHOLE, SPLIT, BLOCKS)


@dataclasses.dataclass(frozen=True)
class Tiling:
    """A Pallas kernel's grid and BlockSpecs, as its pallas_call uses them: HBM-traffic counting
    (experiments/core/traffic.py) evaluates these index maps, so it cannot drift from the kernel."""

    grid: tuple[int, ...]
    in_specs: tuple  # pl.BlockSpec of A, then of B
    out_spec: object  # pl.BlockSpec of the output


@dataclasses.dataclass(frozen=True, kw_only=True)
class KernelFacts:
    """What a kernel is in plain data: all that config checking and planning need (kernels.KERNELS,
    without importing any kernel, or jax)."""

    name: str  # as written in configs and result tables
    dtypes: tuple[str, ...]  # input dtypes it accepts
    grid: str  # one of GRID_KINDS
    description: str  # a few words, for figure titles and report headings (translated: locale/)
    pallas: bool = True  # False for XLA's own matmul (no VMEM blocks of ours, no static profile)
    accumulator: bool = False  # holds a (bm, bn) float32/int32 VMEM scratch accumulator

    def __post_init__(self):
        if self.grid not in GRID_KINDS:
            raise ValueError(f"{self.name}: grid={self.grid!r} is not one of {GRID_KINDS}")

    def facts(self) -> "KernelFacts":
        """The plain-data part (for a KernelSpec: without its functions)."""
        return KernelFacts(**{f.name: getattr(self, f.name) for f in dataclasses.fields(KernelFacts)})


@dataclasses.dataclass(frozen=True, kw_only=True)
class KernelSpec(KernelFacts):
    """A kernel's SPEC: its facts, its wrapper and its tiling."""

    wrapper: Callable  # the public, validating wrapper: wrapper(a, b, **kwargs, interpret=...)
    # (m, k, n, **the wrapper's block arguments) -> Tiling, for kernels with a grid (SPLIT, BLOCKS)
    tiling: Callable | None = None

    def __post_init__(self):
        super().__post_init__()
        if (self.grid != WHOLE) != (self.tiling is not None):
            raise ValueError(f"{self.name}: a kernel with grid={self.grid!r} declares its tiling if and only "
                             "if it has a grid")

    @classmethod
    def of(cls, facts: KernelFacts, **code) -> "KernelSpec":
        """A kernel's SPEC: its facts (kernels.KERNELS) and its code (wrapper, tiling)."""
        return cls(**{f.name: getattr(facts, f.name) for f in dataclasses.fields(KernelFacts)}, **code)

    @property
    def module_path(self) -> str:
        """The kernel's source file, relative to the repository root (for the report's listings)."""
        _, _, module = self.wrapper.__module__.partition(".")  # tpu_matmul_repro.kernels.v1_naive
        return module.replace(".", "/") + ".py"
