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
from types import MappingProxyType

from tpu_matmul_repro.kernels import checks, spec
from tpu_matmul_repro.kernels.spec import KernelFacts, KernelSpec

HERE = Path(__file__).resolve().parent
# The modules whose names a SPEC's plain-data fields may use (neither imports jax).
_PLAIN_MODULES = {f"{__name__}.checks": checks, f"{__name__}.spec": spec}


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
    registry = _unique(found)
    declared = _declarations()
    for name, s in registry.items():  # what planning read from the source is what the kernel says
        if declared.get(name) != s.facts():
            raise ValueError(f"{s.module_path}: its SPEC's facts {s.facts()} are read from its source as "
                             f"{declared.get(name)}; write its plain fields as literals or module constants")
    if set(declared) != set(registry):
        raise ValueError(f"kernels declared {sorted(declared)} but registered {sorted(registry)}")
    return registry


def _declared(path: Path) -> KernelFacts | None:
    """The KernelFacts of the `SPEC = KernelSpec(...)` in a kernel module's source, or None if it has
    none. Each field is a literal, a tuple of them, a sum of tuples, or a name: assigned once at the
    module's top level above it, or imported from kernels.checks or kernels.spec. Anything else, and
    any SPEC that is not such a call with keyword arguments, is refused naming the file, so a fact is
    never read wrong."""
    where = path.relative_to(HERE.parent)
    tree = ast.parse(path.read_text(), filename=str(path))
    names: dict[str, object] = {}
    fields = set(KernelFacts.__dataclass_fields__)
    facts = None

    def refuse(what: str):
        raise ValueError(f"{where}: {what}; planning reads a SPEC's plain fields without importing the "
                         "kernel: write them as literals, or as names assigned once above it or imported "
                         "from tpu_matmul_repro.kernels.checks or .spec")

    def value(node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Tuple):
            return tuple(value(e) for e in node.elts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return value(node.left) + value(node.right)
        if isinstance(node, ast.Name) and node.id in names:
            return names[node.id]
        refuse(f"SPEC's {ast.unparse(node)!r} is not plain data")

    def read_spec(call):
        if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "KernelSpec"):
            refuse(f"SPEC = {ast.unparse(call)!r} is not a KernelSpec(...) call")
        if call.args or any(k.arg is None for k in call.keywords):
            refuse("SPEC's KernelSpec(...) takes its fields as keyword arguments only")
        try:
            return KernelFacts(**{k.arg: value(k.value) for k in call.keywords if k.arg in fields})
        except TypeError as e:
            refuse(f"SPEC: {e}")

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = {node.name}  # its body's names are its own
        else:
            bound = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        if "SPEC" in bound:
            if facts is not None:
                refuse("SPEC is assigned twice")
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                refuse("SPEC is not assigned with a plain `SPEC = KernelSpec(...)`")
            facts = read_spec(node.value)
            continue
        for name in bound:  # a name bound again, or by anything but a plain assignment: no longer a fact
            names.pop(name, None)
        module = f"{__name__}.{node.module}" if isinstance(node, ast.ImportFrom) and node.level == 1 else (
            node.module if isinstance(node, ast.ImportFrom) else None)
        if module in _PLAIN_MODULES and node.level in (0, 1):
            for alias in node.names:
                if alias.name == "*":
                    refuse(f"`from {module} import *` hides which names a SPEC may use")
                names[alias.asname or alias.name] = getattr(_PLAIN_MODULES[module], alias.name)
        elif isinstance(node, ast.Assign) and [type(t) for t in node.targets] == [ast.Name]:
            try:
                names[node.targets[0].id] = value(node.value)
            except ValueError:
                pass  # not plain data (a function, a jax object): never a fact
    return facts


@functools.cache
def _scanned() -> tuple[tuple[KernelFacts, str], ...]:
    """(facts, source file relative to the repository root) of every kernel module."""
    return tuple((facts, f"kernels/{name}.py") for name in _kernel_modules()
                 if (facts := _declared(HERE / f"{name}.py")) is not None)


@functools.cache
def _declarations() -> MappingProxyType:
    return MappingProxyType(_unique(_scanned()))


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


def is_pallas(kernel):
    """Per row of a table: whether its kernel is written in Pallas (its SPEC's `pallas`), i.e. is not
    XLA's own matmul at any precision (xla, xla_highest); `kernel` is a column of kernel names (a
    pandas Series)."""
    return kernel.isin([name for name, facts in _declarations().items() if facts.pallas])


__all__ = ["DECLARED", "REGISTRY", "KernelFacts", "KernelSpec", "is_pallas", "kernel_facts", "kernel_spec",
           "source_file"]
