"""How much slower a task runs when a copy of it runs beside it on this machine: a compute-bound loop,
a memory-bound copy and the yardstick's TPU compiles (benchmarks/calibrate.py), each alone and then
two at once, median of `--repeat`.

    python3 benchmarks/contention.py [--repeat 3] [--json]

Why: with `--cores 2` the pipeline keeps both cores busy (benchmarks/cpu_busy.py), yet its compile
jobs summed 11-19 % more time than with `--cores 1` in four of six benchmarks. A factor near 1.0 for
the loop and well above it for the copy says the two vCPUs share memory bandwidth; the compiles'
factor says how much of that reaches this project's kind of work (the yardstick's compiles are small:
the study's largest walk far bigger grids). benchmarks/default_run.py records them with each run.
"""
import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

CALIBRATE = Path(__file__).resolve().parent / "calibrate.py"
TIMED = "import time\n{setup}\nt = time.perf_counter()\n{body}\nprint(time.perf_counter() - t)"
COMMANDS = {
    # ~1 s of pure interpreter work: registers and L1 only
    "compute": [sys.executable, "-c", TIMED.format(setup="s = 0",
                                                   body="for i in range(12_000_000): s += i * i")],
    # two 64 MiB arrays, far larger than the caches (allocated and touched before the clock starts)
    "memory": [sys.executable, "-c", TIMED.format(
        setup="import numpy as np\na = np.ones(8 * 2**20); b = np.ones_like(a)",
        body="for _ in range(200): np.copyto(b, a); a, b = b, a")],
    # fresh 128 MiB arrays, filled and freed: page faults, as a process that grows to gigabytes makes
    "allocate": [sys.executable, "-c", TIMED.format(
        setup="import numpy as np", body="for _ in range(40): np.ones(16 * 2**20)")],
    # the yardstick's nine compiles (workers started before its clock), as a compile job makes them
    "compile": [sys.executable, str(CALIBRATE), "--json"],
}


def seconds_of(stdout: str) -> float:
    last = stdout.strip().splitlines()[-1]
    return json.loads(last)["compiles_s"] if last.startswith("{") else float(last)


def timed(task: str, copies: int) -> list[float]:
    """Seconds of each of `copies` processes running `task` at once."""
    procs = [subprocess.Popen(COMMANDS[task], stdout=subprocess.PIPE, text=True) for _ in range(copies)]
    outputs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise RuntimeError(f"{task}: a process failed (exit codes {[p.returncode for p in procs]})")
    return [seconds_of(out) for out in outputs]


def slowdowns(repeat: int) -> dict[str, float]:
    """{task: median time of a process with another beside it / median time alone}."""
    out = {}
    for task in COMMANDS:
        alone, together = [], []
        for _ in range(repeat):  # interleaved, so that a drift weighs on both
            alone += timed(task, 1)
            together += timed(task, 2)
        out[task] = statistics.median(together) / statistics.median(alone)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = slowdowns(args.repeat)
    print(json.dumps(result) if args.json else
          "\n".join(f"{task}: {factor:.2f}x as long two at once" for task, factor in result.items()))


if __name__ == "__main__":
    main()
