"""Pallas TPU MatMul kernels from the post "TPU MatMul Kernel" (v1, v2, v3, v5) and the XLA baseline.

v4 is not a kernel of its own: it is v3's kernel swept over block sizes (see config/config.yaml).

Every module of this package that declares a `SPEC` (kernels/spec.py) is a kernel: the registry below
finds them, so adding a kernel is adding a module (and a config entry that uses it).

Two views of the same SPECs:
- `REGISTRY`: the specs themselves, wrappers and tilings included. Importing the kernel modules
  imports jax, so it is made on first use.
- `DECLARED`: their plain-data fields (kernels.spec.KernelFacts), read from the modules' source
  without running them: what checking a config and planning its jobs need, at every Snakemake start.
  tests/test_kernels.py checks that the two agree for every kernel.
"""
import ast
import functools
import importlib
import pkgutil
from pathlib import Path

from kernels import checks, spec
from kernels.spec import KernelFacts, KernelSpec

HERE = Path(__file__).resolve().parent
# The modules whose names a SPEC's plain-data fields may use (neither imports jax).
_PLAIN_MODULES = {"kernels.checks": checks, "kernels.spec": spec}


def _kernel_modules() -> list[str]:
    return sorted(info.name for info in pkgutil.iter_modules(__path__))


def _unique(specs) -> dict:
    registry = {}
    for s, where in specs:
        if s.name in registry:
            raise ValueError(f"kernel name {s.name!r} declared twice ({registry[s.name][1]}, {where})")
        registry[s.name] = (s, where)
    return {name: s for name, (s, _) in sorted(registry.items())}


def _discover() -> dict[str, KernelSpec]:
    found = []
    for name in _kernel_modules():
        s = getattr(importlib.import_module(f"{__name__}.{name}"), "SPEC", None)
        if s is not None:
            found.append((s, s.module_path))
    return _unique(found)


def _declared(path: Path) -> KernelFacts | None:
    """The KernelFacts of the `SPEC = KernelSpec(...)` in a kernel module's source, or None if it has
    none. Each field is a literal, a tuple of them, a sum of tuples, or a name: assigned earlier at the
    module's top level, or imported from kernels.checks or kernels.spec."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: dict[str, object] = {}
    fields = {f for f in KernelFacts.__dataclass_fields__}

    def value(node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Tuple):
            return tuple(value(e) for e in node.elts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return value(node.left) + value(node.right)
        if isinstance(node, ast.Name) and node.id in names:
            return names[node.id]
        raise ValueError(f"{path.relative_to(HERE.parent)}: SPEC's {ast.unparse(node)!r} is not plain data "
                         "(a literal, or a name assigned above or imported from kernels.checks or "
                         "kernels.spec): planning reads it without importing the kernel")

    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module in _PLAIN_MODULES:
            for alias in node.names:
                names[alias.asname or alias.name] = getattr(_PLAIN_MODULES[node.module], alias.name)
        elif isinstance(node, ast.Assign) and [type(t) for t in node.targets] == [ast.Name]:
            target = node.targets[0].id
            if target == "SPEC":
                return KernelFacts(**{k.arg: value(k.value) for k in node.value.keywords if k.arg in fields})
            try:
                names[target] = value(node.value)
            except ValueError:
                names.pop(target, None)  # not plain data (a function, a jax object): never a fact
    return None


@functools.cache
def _scanned() -> tuple[tuple[KernelFacts, str], ...]:
    """(facts, source file relative to the repository root) of every kernel module."""
    return tuple((facts, f"kernels/{name}.py") for name in _kernel_modules()
                 if (facts := _declared(HERE / f"{name}.py")) is not None)


def _declarations() -> dict[str, KernelFacts]:
    return _unique(_scanned())


def source_file(name: str) -> str:
    """The kernel's module, relative to the repository root (the report lists its code)."""
    kernel_facts(name)  # unknown names fail as everywhere else
    return next(where for facts, where in _scanned() if facts.name == name)


def __getattr__(name: str):
    # REGISTRY is made when first asked for: importing the kernels imports jax
    if name == "REGISTRY":
        registry = _discover()
        globals()["REGISTRY"] = registry
        return registry
    if name == "DECLARED":
        return _declarations()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def kernel_spec(name: str) -> KernelSpec:
    """The kernel's spec (imports the kernels, and jax)."""
    registry = globals().get("REGISTRY") or __getattr__("REGISTRY")
    try:
        return registry[name]
    except KeyError:
        raise ValueError(f"kernel={name!r} unknown; expected one of {sorted(registry)}") from None


def kernel_facts(name: str) -> KernelFacts:
    """The kernel's plain-data facts, without importing any kernel."""
    declared = _declarations()
    try:
        return declared[name]
    except KeyError:
        raise ValueError(f"kernel={name!r} unknown; expected one of {sorted(declared)}") from None


__all__ = ["DECLARED", "REGISTRY", "KernelFacts", "KernelSpec", "kernel_facts", "kernel_spec", "source_file"]
