"""Time a fixed set of TPU compiles, uncached, on this machine: the yardstick quoted beside each
benchmark's times, since this VM's speed drifts (docs/development.md, "Benchmarks").
    python3 benchmarks/calibrate.py [--repeat 3]
"""
import argparse
import json
import statistics
import time

from tpu_matmul_repro.experiments.compile_study.tpu_compile import Compiler
from tpu_matmul_repro.experiments.core.cases import Case

# The default run's kinds of compile, as the compile study makes them: plain (XLA), profiled small
# grids of v3 and v5 (the cycle fit's and the VMEM verdict's), one out of VMEM.
PLAIN = (Case("xla", "bfloat16", 4096, 4096, 4096), Case("xla", "float32", 2048, 2048, 2048))
PROFILED = (
    Case("v3", "float32", 512, 512, 512, 128, 128, 128),
    Case("v3", "float32", 1024, 2048, 1024, 512, 512, 512),
    Case("v5", "bfloat16", 512, 1024, 512, 256, 256, 256),
    Case("v5", "bfloat16", 1024, 4096, 2048, 512, 1024, 1024),
    Case("v5", "int8", 1024, 2048, 1024, 512, 512, 512),
    Case("v5", "bfloat16", 1024, 2048, 2048, 512, 2048, 1024),  # out of VMEM (16 MiB)
    Case("v5", "bfloat16", 2048, 4096, 2048, 1024, 1024, 1024),  # out of VMEM
)
WARM_UP = Case("v3", "float32", 256, 256, 256, 128, 128, 128)


def calibrate(target: str = "v5e") -> dict:
    """Seconds for the fixed compiles (workers already started) and for starting the two workers."""
    start = time.perf_counter()
    with Compiler(target) as plain, Compiler(target, profile=True) as profiler:
        plain.compile(WARM_UP)
        profiler.compile(WARM_UP)
        started = time.perf_counter()
        statuses = [plain.compile(case)["status"] for case in PLAIN]
        statuses += [profiler.compile(case)["status"] for case in PROFILED]
        done = time.perf_counter()
    return dict(compiles_s=done - started, start_s=started - start, compiles=len(statuses),
                statuses=statuses)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON object (for the benchmark)")
    args = parser.parse_args()
    runs = [calibrate() for _ in range(args.repeat)]
    seconds = statistics.median(r["compiles_s"] for r in runs)
    if args.json:
        print(json.dumps(dict(runs[0], compiles_s=seconds, runs=[r["compiles_s"] for r in runs])))
    else:
        each = ", ".join(f"{r['compiles_s']:.2f}" for r in runs)
        print(f"{runs[0]['compiles']} compiles: {seconds:.2f} s (median of {len(runs)}: {each}); "
              f"workers' start {runs[0]['start_s']:.2f} s; {runs[0]['statuses']}")


if __name__ == "__main__":
    main()
