"""The repository's Python files parsed once per test process: several tests walk every module's
syntax tree, and only read it."""
import ast
import functools
from pathlib import Path


@functools.cache
def syntax_tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
