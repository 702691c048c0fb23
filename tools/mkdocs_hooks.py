"""MkDocs hooks (mkdocs.yml `hooks:`): the docs' column reference, generated from the table's schema.

A page that holds the line `<!-- columns: SOURCE -->` gets, in its place, the table of every column
whose rows of SOURCE fill it (`all`: every column), read from experiments.core.schema, so that a
column's meaning is written once, beside its type.
"""
import re
from pathlib import Path

MARKER = re.compile(r"^<!-- columns: (\w+) -->$", re.MULTILINE)
# `<!-- include: PATH -->`: a file the repository keeps up to date (a benchmark's latest results), its
# headings moved two levels down so that they nest under the page's.
INCLUDE = re.compile(r"^<!-- include: (\S+) -->$", re.MULTILINE)
ROOT = Path(__file__).resolve().parent.parent


def columns() -> list[dict]:
    """name, kind, unit, sources and meaning of every column of results/matmul.parquet."""
    from tpu_matmul_repro.experiments.core import schema

    specs = getattr(schema, "COLUMN_SPECS", None)
    if specs is None:  # before the column registry: names only
        return [dict(name=c, kind="", unit="", sources=(), meaning="") for c in schema.COLUMNS]
    return [dict(name=c.name, kind=c.kind, unit=c.unit, sources=tuple(c.sources), meaning=c.meaning)
            for c in specs]


def column_table(source: str) -> str:
    rows = [c for c in columns() if source == "all" or source in c["sources"]]
    lines = ["| column | type | unit | rows | meaning |", "| --- | --- | --- | --- | --- |"]
    for c in rows:
        meaning = c["meaning"].replace("|", "\\|")
        lines.append(f"| `{c['name']}` | {c['kind']} | {c['unit']} | {', '.join(c['sources'])} | {meaning} |")
    return "\n".join(lines)


def included(path: str) -> str:
    text = (ROOT / path).read_text(encoding="utf-8")
    return re.sub(r"^(#+) ", lambda m: "#" * min(6, len(m.group(1)) + 2) + " ", text, flags=re.MULTILINE)


def on_page_markdown(markdown, page, config, files):
    markdown = MARKER.sub(lambda m: column_table(m.group(1)), markdown)
    return INCLUDE.sub(lambda m: included(m.group(1)), markdown)
