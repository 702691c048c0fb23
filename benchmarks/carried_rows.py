"""Peak memory and wall time of every job downstream of carried measurement files, by rows carried,
into benchmarks/carried_rows.md (method: docs/development.md, "Benchmarks"). Target: every job < 2 GB.
    python3 benchmarks/carried_rows.py [--rows 1000 10000 100000] [--base DIR] [--cap-mb 8000]
"""
import argparse
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from default_run import machine  # benchmarks/, this script's folder
from synthetic_measured import write_synthetic

REPO = Path(__file__).resolve().parent.parent

CI = ["--cores", "1", "--configfile", "config/config.ci.yaml", "--replace-workflow-config"]
CARRIED = "data/measured/v5e-fleet.parquet"
POLL_S = 0.02
SCRIPT = re.compile(r"\.snakemake/scripts/tmp[^/.]*\.(\w+)\.py$")
# The command runs under this wrapper, which reports the largest peak of any process below it (exact).
WRAPPER = ("import json, resource, subprocess, sys; rc = subprocess.call(sys.argv[2:]); "
           "open(sys.argv[1], 'w').write(json.dumps(dict(rc=rc, "
           "max_rss_kb=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)))")


def children(pid: int) -> list[int]:
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            out += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
    except OSError:  # the process ended meanwhile
        pass
    return out


def tree(root: int) -> list[tuple[int, int]]:
    """(pid, parent pid) of every process below `root`."""
    found, todo = [], [(c, root) for c in children(root)]
    while todo:
        pid, parent = todo.pop()
        found.append((pid, parent))
        todo += [(c, pid) for c in children(pid)]
    return found


def status_kb(pid: int) -> dict:
    """VmHWM (peak resident) and VmRSS (resident now) of a process, in kB; {} once it has ended."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    fields = (line.split(":", 1) for line in lines)
    return {k: int(v.split()[0]) for k, v in fields if k in ("VmHWM", "VmRSS")}


def job_name(pid: int) -> str | None:
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return None
    for arg in args:
        hit = SCRIPT.search(arg)
        if hit:
            return hit.group(1)
    return "snakemake" if "snakemake" in args else None


def monitored(cmd: list[str], cwd: Path, cap_mb: int) -> dict:
    """Run `cmd` in `cwd`; per process its job, peak resident kB and seconds seen; the exact largest peak;
    whether the cap stopped it."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        report = Path(f.name)
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", WRAPPER, str(report), *cmd], cwd=cwd, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    seen, capped = {}, False
    while proc.poll() is None:
        total_kb = 0
        for pid, parent in tree(proc.pid):
            kb = status_kb(pid)
            if not kb:
                continue
            # A new process shows its parent's command line until it execs its own: name it again
            # until it names a script, and start its peak afresh when it does (exec resets VmHWM).
            if pid not in seen or seen[pid]["job"] in (None, "snakemake"):
                job = job_name(pid)
                if pid not in seen or job != seen[pid]["job"]:
                    # a process the job's script forked (same command line) is part of that job
                    forked = parent in seen and seen[parent]["job"] == job
                    seen[pid] = dict(job=job, forked=forked, hwm_kb=0, first=time.monotonic() - start)
            seen[pid]["hwm_kb"] = max(seen[pid]["hwm_kb"], kb.get("VmHWM", 0))
            seen[pid]["last"] = time.monotonic() - start
            total_kb += kb.get("VmRSS", 0)
        if total_kb > cap_mb * 1024 and not capped:
            capped = True
            os.killpg(proc.pid, signal.SIGTERM)  # the group this function started, and nothing else
        time.sleep(POLL_S)
    stderr = proc.stderr.read()
    exact = (json.loads(report.read_text()) if report.stat().st_size  # empty: the cap stopped the wrapper
             else dict(rc=proc.returncode, max_rss_kb=None))
    report.unlink()
    return dict(processes=list(seen.values()), capped=capped, seconds=time.monotonic() - start,
                rc=exact["rc"], max_rss_kb=exact["max_rss_kb"], stderr=stderr)


def by_job(processes: list[dict]) -> dict[str, dict]:
    """Per script: how many jobs ran it, the largest peak of any of them, their total and longest time."""
    out = {}
    for p in processes:
        if p["job"] is None:
            continue
        seconds = p.get("last", p["first"]) - p["first"]
        j = out.setdefault(p["job"], dict(jobs=0, peak_mb=0.0, seconds=0.0, longest=0.0))
        j["peak_mb"] = max(j["peak_mb"], p["hwm_kb"] / 1024)
        if not p["forked"]:
            j["jobs"] += 1
            j["seconds"] += seconds
            j["longest"] = max(j["longest"], seconds)
    return out


def finished_base(base: Path | None, tmp: Path) -> Path:
    if base is not None:
        return base
    base = tmp / "base"
    subprocess.run(["git", "clone", "-q", str(REPO), str(base)], check=True)
    print("running the CI-sized pipeline in", base, flush=True)
    subprocess.run([sys.executable, "-m", "snakemake", *CI], cwd=base, check=True, capture_output=True)
    return base


def measure(base: Path, rows: int, tmp: Path, cap_mb: int) -> dict:
    copy = tmp / f"rows-{rows}"
    shutil.rmtree(copy, ignore_errors=True)
    subprocess.run(["cp", "-a", str(base), str(copy)], check=True)
    for old in (copy / "data" / "measured").glob("*.parquet"):
        old.unlink()
    write_synthetic(copy / CARRIED, rows)
    result = monitored([sys.executable, "-m", "snakemake", *CI], copy, cap_mb)
    shutil.rmtree(copy)
    if result["rc"] != 0 and not result["capped"]:
        sys.exit(f"{rows} rows: snakemake failed:\n{result['stderr'][-3000:]}")
    return result


def table(results: dict[int, dict], cap_mb: int) -> list[str]:
    jobs = {j for r in results.values() for j in by_job(r["processes"])}
    jobs = sorted(jobs, key=lambda j: (j == "snakemake", j))  # Snakemake's own processes last
    lines = ["| rows carried | " + " | ".join(f"{n:,}" for n in results) + " |",
             "| --- |" + " --- |" * len(results)]
    for job in jobs:
        cells = []
        for r in results.values():
            j = by_job(r["processes"]).get(job)
            cells.append("–" if j is None else f"{j['peak_mb']:,.0f} MB, {j['longest']:.1f} s"
                         + (f" ({j['jobs']} jobs, {j['seconds']:.0f} s in all)" if j["jobs"] > 1 else ""))
        lines.append(f"| {job} | " + " | ".join(cells) + " |")
    exact = ["–" if r["max_rss_kb"] is None else f"{r['max_rss_kb'] / 1024:,.0f} MB"
             for r in results.values()]
    lines.append("| largest peak of any process (getrusage) | " + " | ".join(exact) + " |")
    whole = [f"stopped at the {cap_mb:,} MB cap after {r['seconds']:.0f} s" if r["capped"]
             else f"{r['seconds']:.0f} s" for r in results.values()]
    lines.append("| whole run, wall time | " + " | ".join(whole) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--base", type=Path, help="a checkout where the CI-sized run has finished")
    parser.add_argument("--cap-mb", type=int, default=8000, help="stop a run whose processes pass this")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "carried_rows.md")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="carried-", dir=REPO.parent) as tmp:
        base = finished_base(args.base, Path(tmp))
        commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=base, capture_output=True,
                                text=True, check=True).stdout.strip()  # the code that ran: the base's
        for rows in args.rows:
            results[rows] = measure(base, rows, Path(tmp), args.cap_mb)
            print(rows, json.dumps(by_job(results[rows]["processes"])), flush=True)
    lines = [
        "# Carried measurement rows: peak memory and time of the jobs downstream",
        "",
        f"Measured {datetime.date.today().isoformat()}, commit {commit}, by "
        f"`python3 benchmarks/carried_rows.py --rows {' '.join(map(str, args.rows))}`",
        f"on {machine()}, under `nice -n 19` beside other work.",
        "",
        "Each cell: the job's peak resident memory (the kernel's VmHWM) and its wall time; a script run by",
        "several jobs (figures) shows the largest peak and the longest job. The carried file is one",
        "synthetic file of the default config's v5e sweep (315 configurations) measured run after run",
        "(benchmarks/synthetic_measured.py), joined to a finished CI-sized run (config/config.ci.yaml).",
        "",
        *table(results, args.cap_mb),
    ]
    args.out.write_text("\n".join(lines) + "\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
