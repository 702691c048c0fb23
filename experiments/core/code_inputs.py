"""The code behind each stage: its script's import closure, read from import statements, and one digest
of it plus the data files it reads (docs/reproducibility.md, "What reruns when").
"""
import ast
import functools
import hashlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The installed package: `tpu_matmul_repro.<folder>` is `<folder>/` (tpu_matmul_repro/ links to each).
PACKAGE = "tpu_matmul_repro"


def _module_file(name: str, root: Path) -> Path | None:
    """The file of module `name` in the repository (a module, or a package's __init__), or None."""
    path = root.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _discovers_modules(source: str) -> bool:
    """A package that imports its own modules by name at run time (the kernel registry does)."""
    return 'importlib.import_module(f"{__name__}.' in source


def _imports(path: Path, root: Path) -> set[Path]:
    """Repository files that `path` imports (top level or inside functions), one level deep."""
    stat = path.stat()
    found, discovers = _imports_of(path, root, stat.st_mtime_ns, stat.st_size)
    # the package's modules as they are now (a kernel added beside an unchanged __init__.py counts)
    return set(found) | (set(path.parent.glob("*.py")) if discovers else set())


# A line that starts an import statement (at any indentation: imports inside functions count too)
_IMPORT_LINE = re.compile(r"[ \t]*(?:import|from)[ \t]")


def _import_statements(source: str) -> str:
    """The import statements of `source` alone, dedented onto their own lines: parsing these is a fraction
    of parsing the file. A string's line that parses as an import is kept: a file more in a digest."""
    lines, out = source.splitlines(), []
    for i, line in enumerate(lines):
        if not _IMPORT_LINE.match(line):
            continue
        statement = [line.strip()]

        def open_(parts):
            text = "".join(parts)
            return parts[-1].endswith("\\") or text.count("(") > text.count(")")

        while open_(statement) and i + len(statement) < len(lines):
            statement.append(lines[i + len(statement)].strip())
        text = "\n".join(statement)
        try:
            ast.parse(text)
        except SyntaxError:
            continue  # prose that starts with "from" or "import"
        out.append(text)
    return "\n".join(out)


@functools.cache
def _imports_of(path: Path, root: Path, _mtime_ns: int, _size: int) -> tuple[frozenset[Path], bool]:
    """The imports read from one version of a file (parsed once: a workflow's rules share most of
    their closures), and whether it is a package that imports all of its own modules."""
    source = path.read_text()
    names = set()
    for node in ast.walk(ast.parse(_import_statements(source), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}  # `from pkg import module`
    found = set()
    for name in names:
        parts = name.split(".")
        if parts[0] != PACKAGE:
            continue
        parts = parts[1:]
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__.py and a/b/__init__.py too
            module = _module_file(".".join(parts[:i]), root)
            if module is not None:
                found.add(module)
    return frozenset(found), path.name == "__init__.py" and _discovers_modules(source)


def closure(script, root: Path = ROOT) -> list[Path]:
    """`script` and every repository module it imports, transitively, sorted."""
    seen, todo = set(), [Path(script) if Path(script).is_absolute() else root / script]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo += sorted(_imports(path, root) - seen)
    return sorted(seen)


def digest(paths, root: Path = ROOT, *, semantic: bool = False) -> str:
    """sha256 over the files' paths (relative to `root`) and contents, in sorted order; `semantic`: Python
    files by their syntax tree without docstrings (comments, docstrings and wrapping cannot change a
    compile), else by text."""
    h = hashlib.sha256()
    for path in sorted({Path(p) if Path(p).is_absolute() else root / p for p in paths}):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        content = path.read_bytes()
        if semantic and path.suffix == ".py":
            content = ast.dump(_without_docstrings(ast.parse(content, filename=str(path)))).encode()
        h.update(content + b"\0")
    return h.hexdigest()


def _without_docstrings(tree: ast.Module) -> ast.Module:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and ast.get_docstring(node, clean=False) is not None:
            node.body = node.body[1:] or [ast.Pass()]
    return tree


@functools.cache
def code_digest(script: str, *data_globs: str, root: Path = ROOT, modules: tuple = ()) -> str:
    """The digest of `script`'s import closure plus the data files matching `data_globs`; `modules`:
    more modules whose closures count, ones the script imports by name at run time (a study's)."""
    data = [p for pattern in data_globs for p in sorted(root.glob(pattern)) if p.is_file()]
    code = {p for module in (script, *modules) for p in closure(module, root)}
    return digest(sorted(code) + data, root)
