"""How much slower a task runs when another runs beside it on this machine: a compute-bound loop and a
memory-bound copy, each alone and then two at once, median of `--repeat`.

    python3 benchmarks/contention.py [--repeat 5] [--json]

Why: with `--cores 2` the pipeline keeps both cores busy, yet its compile jobs summed 10-19 % more time
than with `--cores 1` in some benchmarks. A factor near 1.0 for the loop and well above it for the
copy says the two vCPUs share memory bandwidth: memory-bound work (a compiler walking large grids)
slows when both run, whatever the scheduling. benchmarks/default_run.py records it with each run.
"""
import argparse
import json
import statistics
import subprocess
import sys

TASKS = {
    # ~1 s of pure interpreter work: registers and L1 only
    "compute": "s = 0\nfor i in range(12_000_000): s += i * i",
    # 64 MiB arrays, far larger than the caches: main-memory bandwidth
    "memory": ("import numpy as np\na = np.ones(8 * 2**20); b = np.empty_like(a)\n"
               "for _ in range(200): np.copyto(b, a); a, b = b, a"),
}
TIMED = "import time\nt = time.perf_counter()\n{body}\nprint(time.perf_counter() - t)"


def timed(task: str, copies: int) -> list[float]:
    """Seconds of each of `copies` processes running `task` at once."""
    code = TIMED.format(body=TASKS[task])
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
             for _ in range(copies)]
    return [float(p.communicate()[0]) for p in procs]


def slowdowns(repeat: int) -> dict[str, float]:
    """{task: median time of a process with another beside it / median time alone}."""
    out = {}
    for task in TASKS:
        alone, together = [], []
        for _ in range(repeat):  # interleaved, so that a drift weighs on both
            alone += timed(task, 1)
            together += timed(task, 2)
        out[task] = statistics.median(together) / statistics.median(alone)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = slowdowns(args.repeat)
    print(json.dumps(result) if args.json else
          "\n".join(f"{task}: {factor:.2f}x as long two at once" for task, factor in result.items()))


if __name__ == "__main__":
    main()
