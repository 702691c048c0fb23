"""Time the default run as a user meets it (cold, warm, no-op) from clean clones, into
benchmarks/default_run.md (method and goals: docs/development.md, "Benchmarks").
    python3 benchmarks/default_run.py [--cores 1 2 2 1] [--fresh-toolchains]
"""
import argparse
import datetime
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cpu_busy  # benchmarks/, this script's folder

from tpu_matmul_repro.experiments.core.cache_dirs import user_cache

REPO = Path(__file__).resolve().parent.parent

FONT_CACHE = user_cache("fonts")  # the Chinese figures' cut font (figures/style.py)


def cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot (/proc/stat, Linux), as benchmarks/cpu_busy.py
    counts them: steal is not busy."""
    busy, _, total = cpu_busy.jiffies(Path("/proc/stat").read_text().splitlines()[0].split()[1:])
    return busy, total


def children_cpu_s() -> float:
    """User and system CPU seconds of this process's finished children and theirs (waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(cmd, cwd, env) -> tuple[float, int, float, float]:
    """(wall seconds, jobs run, mean CPUs busy, CPU seconds): CPUs busy tells idle cores (a scheduling
    loss) from busy cores that work slower (contention), for a run on an otherwise idle machine; the
    CPU seconds are the run's own (Snakemake, its jobs, their workers), whatever else the machine ran."""
    busy_before, total_before = cpu_times()
    cpu_before = children_cpu_s()
    start = time.monotonic()
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    busy_after, total_after = cpu_times()
    if result.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed in {cwd}:\n{result.stderr[-3000:]}")
    jobs = result.stderr.count("Finished job") or result.stderr.count("Finished jobid")
    cores_busy = os.cpu_count() * (busy_after - busy_before) / max(1, total_after - total_before)
    return elapsed, jobs, cores_busy, children_cpu_s() - cpu_before


BUILT_OR_REUSED = re.compile(r"toolchain (\S+): environment (built in \d+ s|reused)")


def toolchain_environments(checkout: Path) -> str:
    """What the run did with each toolchain environment, from its toolchain_environment logs
    (toolchain_env.built_or_reused): e.g. "post: built in 17 s", "post: reused"; "" without any."""
    said = [m for log in sorted((checkout / "logs" / "toolchains").glob("*/environment.log"))
            for m in BUILT_OR_REUSED.finditer(log.read_text(errors="replace"))]
    return ", ".join(f"{m[1]}: {m[2]}" for m in said)


def output_cache_hits(checkout: Path) -> str:
    """How many of the run's jobs that ask the output cache (experiments/core/output_cache.py) had
    their outputs copied from it, from the jobs' logs: e.g. "31 of 33"; "" when none asks it."""
    texts = [log.read_text(errors="replace") for log in (checkout / "logs").rglob("*.log")]
    asked = sum(text.count("output cache key ") for text in texts)
    copied = sum(text.count("outputs copied from the output cache") for text in texts)
    return f"{copied} of {asked}" if asked else ""


def snakemake(cores: int) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--cores", str(cores)]


def clone(dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(REPO), str(dest)], check=True)
    return dest


def cpu_model() -> str:
    """The CPU's model name (Linux), else what platform says."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def machine() -> str:
    cpu = cpu_model()
    mem = next((int(line.split()[1]) // 1024 // 1024
                for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")), 0)
    return (f"{os.cpu_count()} cores ({cpu}), {mem} GiB, {platform.platform()}, "
            f"Python {platform.python_version()}")


def minutes(seconds: float) -> str:
    whole = round(seconds)  # 299.8 s is "5 min 0 s", not "4 min 60 s"
    return f"{whole // 60} min {whole % 60} s" if seconds >= 60 else f"{seconds:.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cores", type=int, nargs="+", default=[1, 2, 2, 1])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "default_run.md",
                        help="the Markdown file the record is written to (a file, not a folder)")
    parser.add_argument("--fresh-toolchains", action="store_true",
                        help="an empty toolchain folder for each cold run: its environments are built")
    args = parser.parse_args()
    if args.out.is_dir() or not args.out.parent.is_dir():  # before any run, not after ten minutes of them
        parser.error(f"--out {args.out}: the record is a file in an existing folder, not "
                     f"{'a folder' if args.out.is_dir() else 'in a missing folder'}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    rows, stages = [], {}
    # Written once the runs end or stop, never between them: a tracked file changed mid-benchmark would
    # make the checkout "-dirty" and the warm run miss the output cache (docs/development.md).
    try:
        measure(args, rows, stages)
    finally:
        if rows:
            write_report(args.out, commit, rows, stages, args.cores)
            print(args.out.read_text())


def measure(args, rows, stages) -> None:
    """The cold runs, the warm run and the no-op, each appended to `rows` as it ends."""
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        tmp = Path(tmp)
        first = None
        for i, cores in enumerate(args.cores, 1):
            checkout = clone(tmp / f"run{i}-cores{cores}")
            env = dict(os.environ, TPU_MATMUL_REPRO_CACHE=str(tmp / f"cache{i}"))
            if args.fresh_toolchains:
                env["TPU_MATMUL_REPRO_TOOLCHAINS"] = str(tmp / f"toolchains{i}")
            shutil.rmtree(FONT_CACHE, ignore_errors=True)  # the Chinese figures' cut font: cold too
            before = calibration()
            seconds, jobs, busy, cpu = run(snakemake(cores), checkout, env)
            rows.append((f"cold, --cores {cores}", seconds, jobs, busy, cpu, (before, calibration()),
                         toolchain_environments(checkout), output_cache_hits(checkout)))
            stages[f"{cores} (run {i})"] = job_time_by_rule(checkout)
            print(rows[-1], flush=True)
            first = first or (checkout, env)
        checkout, env = first
        for folder in ("results", "logs"):  # logs too: the warm run's toolchain line is its own
            subprocess.run(["rm", "-rf", str(checkout / folder)], check=True)
        seconds, jobs, busy, cpu = run(snakemake(args.cores[0]), checkout, env)
        warm = f"warm cache (results/ deleted), --cores {args.cores[0]}"
        rows.append((warm, seconds, jobs, busy, cpu, None, toolchain_environments(checkout),
                     output_cache_hits(checkout)))
        stages[f"{args.cores[0]}, warm cache"] = job_time_by_rule(checkout, latest=True)
        print(rows[-1], flush=True)
        seconds, jobs, busy, cpu = run(snakemake(args.cores[0]), checkout, env)
        rows.append(("no-op", seconds, jobs, busy, cpu, None, "", ""))
        print(rows[-1], flush=True)


def calibration() -> float | None:
    """benchmarks/calibrate.py's fixed compiles, median of three, in seconds: the machine's speed now;
    None (the record shows nothing) if it fails: the benchmark's own runs still count."""
    result = subprocess.run([sys.executable, str(REPO / "benchmarks" / "calibrate.py"), "--json", "--repeat",
                             "3"], capture_output=True, text=True)
    if result.returncode != 0:
        print(f"yardstick failed:\n{result.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(result.stdout.strip().splitlines()[-1])["compiles_s"]


def yardsticks(pair) -> str:
    return "" if pair is None else ", ".join("failed" if s is None else f"{s:.2f} s" for s in pair)


def job_time_by_rule(checkout: Path, latest: bool = False) -> dict[str, tuple[float, int, float]]:
    """rule -> (summed job wall time, jobs, longest job) from Snakemake's own log of the run (the
    latest run's only, with `latest`): where the time goes, and whether one job holds up the others."""
    stamp = r"\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]\n"
    logs = sorted((checkout / ".snakemake" / "log").glob("*.log"))  # named by their start time
    text = "".join(p.read_text() for p in (logs[-1:] if latest else logs))
    started, rule_of, out = {}, {}, {}
    event = r"(?:local)?(?:rule (\w+):[\s\S]*?jobid: (\d+)|Finished jobid: (\d+))"
    for m in re.finditer(stamp + event, text):
        when = datetime.datetime.strptime(m[1], "%a %b %d %H:%M:%S %Y")
        if m[2]:
            started[m[3]], rule_of[m[3]] = when, m[2]
        elif m[4] in started:
            total, jobs, longest = out.get(rule_of[m[4]], (0.0, 0, 0.0))
            seconds = (when - started[m[4]]).total_seconds()
            out[rule_of[m[4]]] = (total + seconds, jobs + 1, max(longest, seconds))
    return dict(sorted(out.items(), key=lambda kv: -kv[1][0]))


def speed_up(rows, cores):
    """((first cores value, its mean cold time), (the other, its mean)) once both have a cold run."""
    values = list(dict.fromkeys(cores))
    if len(values) < 2:
        return None
    means = []
    for n in values[:2]:
        times = [seconds for name, seconds, *_ in rows if name == f"cold, --cores {n}"]
        if not times:
            return None
        means.append((n, sum(times) / len(times)))
    return tuple(means)


def write_report(path: Path, commit: str, rows, stages, cores) -> None:
    lines = [
        "# Default run: wall time",
        "",
        f"Measured {datetime.date.today().isoformat()}, commit {commit}, "
        "by `python3 benchmarks/default_run.py`",
        f"on {machine()}.",
        "",
        "| run | wall time | CPU time | jobs run | CPUs busy (mean) | yardstick before, after the run "
        "| toolchain environment | jobs from the output cache |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        *[f"| {name} | {minutes(seconds)} ({seconds:.0f} s) | {cpu:.0f} s | {jobs} | {busy:.2f} | "
          f"{yardsticks(pair)} | {toolchains} | {hits} |"
          for name, seconds, jobs, busy, cpu, pair, toolchains, hits in rows],
        "",
        "Yardstick: `benchmarks/calibrate.py`, nine fixed compiles (median of three), timed just before",
        "and just after the run: this VM's speed drifts, so a run's time compares with another's only at",
        "similar yardsticks (a short yardstick can miss a drift within the run: compare also the figures",
        "job's time below, whose code rarely changes). CPUs busy: the machine's, from /proc/stat over",
        "the run (idle cores are a scheduling loss; busy ones that work slower are contention). CPU time:",
        "the run's own processes, user and system. Toolchain environment: built by the run or reused",
        "(built once per machine, kept outside results/; `--fresh-toolchains` builds it in every cold",
        "run). Jobs from the output cache: of the jobs that look their outputs up in it (by the content",
        "of their inputs, params, config and software), those whose outputs were copied from it.",
    ]
    speedup = speed_up(rows, cores)
    if speedup:
        (a, mean_a), (b, mean_b) = speedup
        lines += ["", f"Speed-up of --cores {b} over --cores {a}: {mean_a / mean_b:.2f} (mean cold times "
                      f"{mean_a:.0f} s and {mean_b:.0f} s)."]
    for n, by_rule in stages.items():
        run = f"Run with --cores {n}" if "warm" in n else f"Cold run with --cores {n}"
        lines += ["", f"{run}, job wall time by rule (Snakemake's log, 1 s resolution):",
                  "",
                  "| rule | jobs | summed | longest job |", "| --- | --- | --- | --- |",
                  *[f"| {rule} | {jobs} | {total:.0f} s | {longest:.0f} s |"
                    for rule, (total, jobs, longest) in by_rule.items()]]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
