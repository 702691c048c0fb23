"""Time the default pipeline run as a user meets it, and record the figures in benchmarks/default_run.md.

    python3 benchmarks/default_run.py [--cores 1 2] [--skip-cold]

From a clean clone of this checkout's HEAD, in the current Python environment:
  1. cold, --cores 1: empty compile cache (a fresh TPU_MATMUL_REPRO_CACHE folder), no results;
  2. cold, --cores 2: the same, in another clean clone with its own empty cache;
  3. warm cache: results/ deleted, the compile cache of run 1 kept;
  4. no-op: everything up to date.
Toolchain environments (if any) are not deleted: "cold" means no compiles cached, not no packages.
Each figure is wall time of `python3 -m snakemake --cores N`; the file records the date, commit and
machine. The targets (issue 14): cold <= 10 min with --cores 1 and <= 6 min with --cores 2, warm <= 2
min, no-op <= 10 s.
"""
import argparse
import datetime
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run(cmd, cwd, env) -> tuple[float, int]:
    start = time.monotonic()
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    if result.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed in {cwd}:\n{result.stderr[-3000:]}")
    jobs = result.stderr.count("Finished job") or result.stderr.count("Finished jobid")
    return elapsed, jobs


def clone(dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(REPO), str(dest)], check=True)
    return dest


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    mem = next((int(line.split()[1]) // 1024 // 1024
                for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")), 0)
    return (f"{os.cpu_count()} cores ({cpu}), {mem} GiB, {platform.platform()}, "
            f"Python {platform.python_version()}")


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:.0f} s" if seconds >= 60 else f"{seconds:.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cores", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "default_run.md")
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        tmp = Path(tmp)
        first = None
        for cores in args.cores:
            checkout = clone(tmp / f"cores{cores}")
            env = dict(os.environ, TPU_MATMUL_REPRO_CACHE=str(tmp / f"cache{cores}"))
            seconds, jobs = run([sys.executable, "-m", "snakemake", "--cores", str(cores)], checkout, env)
            rows.append((f"cold, --cores {cores}", seconds, jobs))
            print(rows[-1], flush=True)
            first = first or (checkout, env)
        checkout, env = first
        subprocess.run(["rm", "-rf", str(checkout / "results")], check=True)
        seconds, jobs = run([sys.executable, "-m", "snakemake", "--cores", str(args.cores[0])], checkout, env)
        rows.append((f"warm cache (results/ deleted), --cores {args.cores[0]}", seconds, jobs))
        print(rows[-1], flush=True)
        seconds, jobs = run([sys.executable, "-m", "snakemake", "--cores", str(args.cores[0])], checkout, env)
        rows.append(("no-op", seconds, jobs))
        print(rows[-1], flush=True)
    lines = [
        "# Default run: wall time",
        "",
        f"Measured {datetime.date.today().isoformat()}, commit {commit}, "
        "by `python3 benchmarks/default_run.py`",
        f"on {machine()}.",
        "",
        "| run | wall time | jobs run |",
        "| --- | --- | --- |",
        *[f"| {name} | {minutes(seconds)} ({seconds:.0f} s) | {jobs} |" for name, seconds, jobs in rows],
    ]
    if len(args.cores) > 1:
        speedup = rows[0][1] / rows[1][1]
        lines += ["", f"Speed-up of --cores {args.cores[1]} over --cores {args.cores[0]}: {speedup:.2f}."]
    args.out.write_text("\n".join(lines) + "\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
