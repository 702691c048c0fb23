"""The structure the layout promises, read from the code's own import statements (nothing is run):
no import cycle among the project's modules, and no lower layer importing a higher one."""
import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Layers, lowest first: a module may import its own layer and those below it, never one above.
LAYERS = {"kernels": 0, "experiments": 1, "figures": 2, "report": 3, "studies": 4, "advise": 4}


@functools.cache
def modules() -> dict[str, Path]:
    found = {}
    for package in LAYERS:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """module -> the project's modules it imports (at top level or inside functions)."""
    known = modules()
    graph = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parent + ([node.module] if node.module else []))
                imported.add(base)
                imported |= {f"{base}.{alias.name}" for alias in node.names}
        graph[name] = {m for m in imported if m in known and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    assert cycles(import_graph()) == []


@pytest.mark.parametrize("module", sorted(modules()))
def test_no_module_imports_a_higher_layer(module):
    own = LAYERS[module.split(".")[0]]
    higher = sorted(m for m in import_graph()[module] if LAYERS[m.split(".")[0]] > own)
    assert not higher, f"{module} (layer {own}) imports {higher}"


def test_the_core_reads_without_the_studies():
    """Nothing outside studies/ (the scripts and rules of the core included) names a study: the core
    meets one only by the names of the config's `studies` list (experiments/plan/studies.py), and the
    layer test above keeps it from importing one."""
    from experiments.plan.config import study_names

    names = study_names()
    assert "then_and_now" in names and "history" in names
    core = [p for d in ("kernels", "experiments", "figures", "report", "scripts", "rules")
            for p in (ROOT / d).rglob("*") if p.suffix in (".py", ".smk", ".j2")]
    naming = [(str(p.relative_to(ROOT)), name) for p in core for name in names
              if re.search(rf"studies[./]{name}\b", p.read_text())]
    assert naming == []


def test_every_column_is_declared_once_with_its_meaning():
    from experiments.core.schema import COLUMN_SPECS, COLUMNS, SOURCES

    assert len(COLUMNS) == len(set(COLUMNS))
    for column in COLUMN_SPECS:
        assert column.meaning and column.sources and set(column.sources) <= set(SOURCES), column.name
