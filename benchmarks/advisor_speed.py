"""Time the advisor for one shape per target, cold and warm, beside the machine's yardstick, into
benchmarks/advisor_speed.csv (method and goals: docs/development.md, "Benchmarks").
    python3 benchmarks/advisor_speed.py [--targets v5e v6e v5p 7x] [--shape 8192x4096x14336] [--many v6e]
"""
import argparse
import datetime
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from default_run import cpu_model  # benchmarks/, this script's folder

from tpu_matmul_repro.experiments.core.atomic_write import write_atomic

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "advisor_speed.csv"
MANY = "cold, 21 shapes"
GOALS = {"cold": 20.0, "warm": 2.0, MANY: 120.0}
# m from one token to a long prompt, against the projections of a 4096-wide model with a 7168 MLP
MANY_SHAPES = [f"{m}x{k}x{n}" for k, n in ((4096, 4096), (4096, 7168), (7168, 4096))
               for m in (128, 256, 512, 1024, 2048, 4096, 8192)]
# the advisor's log line (advise/cli.py's advice()) that counts a search's compiles
_COMPILES = re.compile(r"advice \S+ on \S+: (\d+) of (\d+) compiles from the compile cache, "
                       r"(\d+) compiled here")


def compiles(log: str) -> tuple[int, int]:
    """(compiled here, from the cache) of the searches in an advisor's verbose log, summed."""
    found = _COMPILES.findall(log)
    if not found:
        raise ValueError("expected a line 'advice ...: H of N compiles from the compile cache, M compiled "
                         "here' in the advisor's log, found none")
    return sum(int(f[2]) for f in found), sum(int(f[0]) for f in found)


def timed(argv: list[str], env: dict) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the command and its children, stderr) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv)} exited with {done.returncode}: {done.stderr.strip()[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stderr


def yardstick() -> float:
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "calibrate.py"), "--json"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    return round(json.loads(out.strip().splitlines()[-1])["compiles_s"], 2)


def fitted_model() -> list[Path]:
    """Fit the advisor's model into the user's cache (if it is not there) and return its files."""
    from tpu_matmul_repro.experiments.core.cache_dirs import CACHE_VARIABLE, user_cache

    env = {k: v for k, v in os.environ.items() if k != CACHE_VARIABLE}
    subprocess.run([sys.executable, "-m", "tpu_matmul_repro.advise", "1024x512x2048", "--results", "none"],
                   env=env, cwd=REPO, capture_output=True, check=True)
    models = sorted(user_cache("advise").glob("model-*.json"))
    if not models:
        raise RuntimeError(f"no model-*.json in {user_cache('advise')} after fitting it")
    return models


def measured_commit() -> str:
    """The checkout's commit as provenance gives it, "-dirty" dropped where the record itself is the
    only tracked file changed: a run appends to it, and the next run measures the same code."""
    from tpu_matmul_repro.experiments.core.provenance import provenance

    sha = provenance()["git_sha"]
    changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                              f":!{OUT.relative_to(REPO)}"], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.strip()
    return sha.removesuffix("-dirty") if not changed else sha


def runs(targets, shape: str, models: list[Path], many: str | None) -> list[dict]:
    """Per target a cold call (a fresh cache holding only the fitted model) and a warm one (the cache
    it filled); then the 21 shapes in one cold call on `many`."""
    calls = [(target, run, [shape]) for target in targets for run in ("cold", "warm")]
    calls += [(many, MANY, MANY_SHAPES)] if many else []
    rows = []
    with tempfile.TemporaryDirectory(prefix="advisor-speed-") as scratch:
        folder = None
        for target, run, shapes in calls:
            if run != "warm":
                folder = Path(tempfile.mkdtemp(dir=scratch))
                (folder / "advise").mkdir()
                for model in models:
                    shutil.copy(model, folder / "advise" / model.name)
            env = dict(os.environ, TPU_MATMUL_REPRO_CACHE=str(folder))
            load = os.getloadavg()[0]
            wall, cpu, log = timed([sys.executable, "-m", "tpu_matmul_repro.advise", *shapes, "--target",
                                    target, "--results", "none", "-v"], env)
            made, cached = compiles(log)
            label = shape if len(shapes) == 1 else f"{len(shapes)} LLM projections"
            rows.append(dict(target=target, run=run, shape=label, wall_s=round(wall, 1),
                             cpu_s=round(cpu, 1), compiled=made, cached=cached, load=round(load, 2)))
            print(f"{target} {run}: {wall:.1f} s wall, {cpu:.1f} s CPU, {made} compiled, {cached} cached",
                  file=sys.stderr)
    return rows


def table(rows: pd.DataFrame) -> str:
    """The record's rows as docs/advisor.md's table."""
    lines = ["| target | run | wall | CPU | compiled (cached) | load at start | goal (wall) | met |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows.itertuples():
        g = GOALS.get(r.run)
        met = "" if g is None else ("yes" if r.wall_s <= g else "no")
        lines.append(f"| {r.target} | {r.run} | {r.wall_s:.1f} s | {r.cpu_s:.1f} s | {r.compiled} "
                     f"({r.cached}) | {r.load:.2f} | {'' if g is None else f'<= {g:.0f} s'} | {met} |")
    return "\n".join(lines)


def summary(record: pd.DataFrame) -> str:
    """Per target and run, the runs of the latest commit the record has for that target, as
    docs/advisor.md's table: the commit, how many runs, the median wall time and the range, the median
    CPU, and whether the median meets the goal."""
    lines = ["| target | run | commit | runs | wall: median (range) | CPU: median | goal (wall) "
             "| median meets it |", "|---|---|---|---|---|---|---|---|"]
    for (target, run), group in record.groupby(["target", "run"], sort=False):
        group = group[group.git_sha == group.git_sha.iloc[-1]]
        wall, g = group.wall_s.median(), GOALS.get(run)
        met = "" if g is None else ("yes" if wall <= g else "no")
        lines.append(f"| {target} | {run} | {group.git_sha.iloc[0][:7]} | {len(group)} | {wall:.1f} s "
                     f"({group.wall_s.min():.1f}-{group.wall_s.max():.1f} s) | "
                     f"{group.cpu_s.median():.1f} s | {'' if g is None else f'<= {g:.0f} s'} | {met} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=["v5e", "v6e", "v5p", "7x"])
    parser.add_argument("--shape", default="8192x4096x14336")
    parser.add_argument("--many", default="v6e", help="the 21 shapes' target ('' for none)")
    args = parser.parse_args(argv)
    models = fitted_model()
    start = datetime.datetime.now(datetime.timezone.utc)
    before = yardstick()
    rows = runs(args.targets, args.shape, models, args.many or None)
    after = yardstick()
    new = pd.DataFrame(rows).assign(git_sha=measured_commit(), date=start.date().isoformat(),
                                    started_utc=start.strftime("%H:%M"), cpu=cpu_model(),
                                    cores=os.cpu_count(), yardstick_before_s=before,
                                    yardstick_after_s=after)
    old = pd.read_csv(OUT) if OUT.exists() else new.iloc[:0]
    table_all = pd.concat([old, new], ignore_index=True)
    write_atomic(OUT, lambda tmp: table_all.to_csv(tmp, index=False))
    print(table(new))
    print(f"\nEach target's latest commit in {OUT.name}:\n{summary(table_all)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
