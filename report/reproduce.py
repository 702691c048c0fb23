"""The report's "How to reproduce" box: the commands, the versions and the cold run's time, read from
the benchmark record (benchmarks/default_run.md, which benchmarks/default_run.py writes)."""
import re
from pathlib import Path

RECORD = Path(__file__).resolve().parent.parent / "benchmarks" / "default_run.md"
COMMANDS = ("python3 -m pip install -r requirements.txt -e .", "python3 -m snakemake --cores 1")


def benchmark_record(path: Path = RECORD) -> dict | None:
    """The record's date, commit, machine, Python and the cold --cores 1 run's wall time (None where the
    file or one of them is missing)."""
    try:
        text = path.read_text()
    except OSError:
        return None
    head = re.search(r"Measured (\S+), commit (\w+), by .*?\s+on (.+?), Python ([\d.]+)\.", text, flags=re.S)
    cold = re.search(r"^\| cold, --cores 1 \| ([^|]+?) \|", text, flags=re.M)
    if not (head and cold):
        return None
    date, commit, machine, python = head.groups()
    return dict(date=date, commit=commit, machine=" ".join(machine.split()), python=python,
                cold=cold[1].strip())


def toolchain_versions(provenance: list[dict]) -> list[dict]:
    """Each toolchain's jax and libtpu, from the provenance rows of estimates (the pipeline's first)."""
    seen = {}
    for p in provenance:
        if p["source"] == "estimate" and p["toolchain"] not in seen:
            seen[p["toolchain"]] = dict(toolchain=p["toolchain"], jax=p["jax"], libtpu=p["libtpu"],
                                        released=p["released"])
    return sorted(seen.values(), key=lambda t: t["toolchain"] != "current")
