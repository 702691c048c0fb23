"""Whether a block grid's two-step grid (study.two_step_grid), compiled plainly, asks the VMEM its full
size asks: the record behind study.TWO_STEP_VMEM, written to data/small_grid_vmem_check.csv.
    python3 benchmarks/small_grid_vmem.py [--targets v5e v6e v5p 7x] [--shapes 8192x4096x14336 ...]
"""
import argparse
import datetime
import sys
from pathlib import Path

import pandas as pd

from tpu_matmul_repro.advise.candidates import candidates
from tpu_matmul_repro.advise.cli import checked_config, compiler_for
from tpu_matmul_repro.experiments.compile_study import cache
from tpu_matmul_repro.experiments.compile_study.study import job_versions, two_step_grid
from tpu_matmul_repro.experiments.compile_study.tpu_compile import Compiler
from tpu_matmul_repro.experiments.core.atomic_write import write_atomic
from tpu_matmul_repro.experiments.core.chips import chip
from tpu_matmul_repro.experiments.core.provenance import provenance
from tpu_matmul_repro.experiments.core.traffic import min_vmem_bytes

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "data" / "small_grid_vmem_check.csv"
# a large and a skinny LLM projection (bfloat16), and a float32 square
SHAPES = ("8192x4096x14336", "256x7168x4096", "4096x4096x4096")


PER_SHAPE = 12  # candidates checked per shape and target, evenly spread over the sorted candidates


def cases_of(target: str, shapes) -> list:
    out = []
    for text in shapes:
        shape = tuple(int(x) for x in text.split("x"))
        dtype = "float32" if text == "4096x4096x4096" else "bfloat16"
        fit = [c.case for c in candidates("v5", dtype, shape, target)
               if min_vmem_bytes(c.case) <= chip(target).vmem_bytes and two_step_grid(c.case) != c.case]
        step = max(1, len(fit) // PER_SHAPE)
        out += fit[::step][:PER_SHAPE]
    return out


def check(target: str, config: dict, shapes) -> list[dict]:
    compiler = compiler_for(target, config)
    python = compiler.get("python")
    versions = job_versions(compiler.get("versions"))
    rows = []
    with Compiler(target, cache=cache.for_target(target, False, versions), python=python,
                  env=compiler.get("env"), toolchain=compiler["toolchain"] if python else "",
                  timeout_s=600) as plain:
        for case in cases_of(target, shapes):
            small = two_step_grid(case)
            full, two = plain.compile(case), plain.compile(small)
            rows.append(dict(target=target, libtpu_version=versions["libtpu_version"], kernel=case.kernel,
                             dtype=case.dtype, m=case.m, k=case.k, n=case.n, bm=case.bm, bk=case.bk,
                             bn=case.bn, two_step="x".join(map(str, small.grid())),
                             full_status=full["status"], full_vmem_bytes=full["vmem_bytes"],
                             two_step_status=two["status"], two_step_vmem_bytes=two["vmem_bytes"]))
            same = (full["status"], full["vmem_bytes"]) == (two["status"], two["vmem_bytes"])
            print(f"{target} {case.label()}: {full['status']} {full['vmem_bytes']} / {two['status']} "
                  f"{two['vmem_bytes']}{'' if same else '  DIFFERENT'}", file=sys.stderr)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=["v5e", "v6e", "v5p", "7x"])
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES))
    args = parser.parse_args(argv)
    config = checked_config(REPO / "config" / "config.yaml")
    new = pd.DataFrame([row for target in args.targets for row in check(target, config, args.shapes)])
    new = new.assign(git_sha=provenance()["git_sha"], date=datetime.date.today().isoformat())
    old = pd.read_csv(OUT, dtype={"libtpu_version": str}) if OUT.exists() else new.iloc[:0]
    table = pd.concat([old[~old.target.isin(args.targets)], new], ignore_index=True)
    write_atomic(OUT, lambda tmp: table.to_csv(tmp, index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
