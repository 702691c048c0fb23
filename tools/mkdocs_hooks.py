"""MkDocs hooks (mkdocs.yml `hooks:`): `<!-- columns: SOURCE -->` becomes the column reference from
experiments.core.schema, `<!-- default-run: RUN -->` that run's time in benchmarks/default_run.md.
"""
import re
from pathlib import Path

MARKER = re.compile(r"^<!-- columns: (\w+) -->$", re.MULTILINE)
# `<!-- include: PATH -->`: a file the repository keeps up to date (a benchmark's latest results), its
# headings moved two levels down so that they nest under the page's.
INCLUDE = re.compile(r"^<!-- include: (\S+) -->$", re.MULTILINE)
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RUN = re.compile(r"<!-- default-run: (.+?) -->")
BENCHMARK = "benchmarks/default_run.md"


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


def benchmark_record(text: str) -> dict:
    """The first record of a default-run benchmark file: its date, commit and {run: wall time} (the
    first table after the record's "Measured DATE, commit SHA" line)."""
    head = re.search(r"^Measured (\S+), commit (\w+)", text, re.MULTILINE)
    if head is None:
        raise ValueError(f"{BENCHMARK}: no line 'Measured DATE, commit SHA'")
    runs, in_table = {}, False
    for line in text[head.end():].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|"):
            in_table = True
            if cells[0] not in ("run", "") and not set(cells[0]) <= set("-: "):
                runs[cells[0]] = cells[1]
        elif in_table:
            break
    return dict(date=head.group(1), commit=head.group(2), runs=runs)


def default_run_time(run: str, text: str | None = None) -> str:
    """`run`'s wall time as the benchmark record states it, with the record's date and commit."""
    record = benchmark_record((ROOT / BENCHMARK).read_text(encoding="utf-8") if text is None else text)
    if run not in record["runs"]:
        known = ", ".join(record["runs"])
        raise ValueError(f"{BENCHMARK}: no run {run!r} in its first table (runs: {known})")
    return f"{record['runs'][run]}, measured {record['date']} at commit {record['commit']} ({BENCHMARK})"


def on_page_markdown(markdown, page, config, files):
    markdown = MARKER.sub(lambda m: column_table(m.group(1)), markdown)
    markdown = DEFAULT_RUN.sub(lambda m: default_run_time(m.group(1)), markdown)
    return INCLUDE.sub(lambda m: included(m.group(1)), markdown)
