"""Pallas TPU MatMul kernels of the post (v1, v2, v3, v5; v4 is v3 swept over blocks) and XLA's baselines.
`KERNELS`: each kernel's module and plain facts (kernels/spec.py), all that checking a config and planning
need without importing jax; a module builds its `SPEC` from them and is imported on first use."""
import importlib
from types import MappingProxyType

from tpu_matmul_repro.kernels.checks import FLOAT_DTYPES, INT_DTYPES
from tpu_matmul_repro.kernels.spec import BLOCKS, SPLIT, WHOLE, KernelFacts, KernelSpec

KERNELS = {  # name -> (module, facts); the descriptions title figures and report sections (locale/)
    "v1": ("v1_naive", KernelFacts(name="v1", dtypes=FLOAT_DTYPES, grid=WHOLE,
                                   description="naive, whole arrays in VMEM")),
    "v2": ("v2_parallel", KernelFacts(name="v2", dtypes=FLOAT_DTYPES, grid=SPLIT,
                                      description="a row/column split grid")),
    "v3": ("v3_block", KernelFacts(name="v3", dtypes=FLOAT_DTYPES, grid=BLOCKS,
                                   description="a 3-D block grid")),
    "v5": ("v5_accumulator", KernelFacts(name="v5", dtypes=FLOAT_DTYPES + INT_DTYPES, grid=BLOCKS,
                                         accumulator=True,
                                         description="low-precision inputs + a float32 (int32) accumulator")),
    "xla": ("xla_baseline", KernelFacts(name="xla", dtypes=FLOAT_DTYPES + INT_DTYPES, grid=WHOLE,
                                        pallas=False, description="XLA's own jnp.matmul, the baseline")),
    "xla_highest": ("xla_highest", KernelFacts(name="xla_highest", dtypes=("float32",), grid=WHOLE,
                                               pallas=False,
                                               description="XLA's own jnp.matmul at precision=HIGHEST")),
}
DECLARED = MappingProxyType({name: facts for name, (_, facts) in KERNELS.items()})


def source_file(name: str) -> str:
    """The kernel's module, relative to the repository root (the report lists its code)."""
    kernel_facts(name)  # unknown names fail as everywhere else
    return f"kernels/{KERNELS[name][0]}.py"


def __getattr__(name: str):
    # REGISTRY is made when first asked for: importing the kernels imports jax
    if name == "REGISTRY":
        registry = {kernel: kernel_spec(kernel) for kernel in KERNELS}
        globals()["REGISTRY"] = registry
        return registry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def kernel_spec(name: str) -> KernelSpec:
    """The kernel's spec (imports its module, and jax)."""
    kernel_facts(name)
    return importlib.import_module(f"{__name__}.{KERNELS[name][0]}").SPEC


def kernel_facts(name: str) -> KernelFacts:
    """The kernel's plain-data facts, without importing any kernel."""
    try:
        return DECLARED[name]
    except KeyError:
        raise ValueError(f"kernel={name!r} unknown; expected one of {sorted(DECLARED)}") from None


def is_pallas(kernel):
    """Per row of a table: whether its kernel is written in Pallas (its facts' `pallas`), i.e. is not
    XLA's own matmul at any precision (xla, xla_highest); `kernel` is a column of kernel names (a
    pandas Series)."""
    return kernel.isin([name for name, facts in DECLARED.items() if facts.pallas])


__all__ = ["DECLARED", "KERNELS", "REGISTRY", "KernelFacts", "KernelSpec", "is_pallas", "kernel_facts",
           "kernel_spec", "source_file"]
