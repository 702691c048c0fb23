"""Whether a 7x block grid's representative small grid, compiled as the compile study compiles it where
no operand can be prefetched (extrapolate.never_prefetched: profiled, with the fit options), asks the
VMEM its full size asks in a plain compile: the verdict the study and the advisor then take from it.

    python3 benchmarks/representative_vmem.py [7x]

Checks every block the advisor's 7x example compiles (benchmarks/extrapolation.py's EXAMPLE, and the
five its search finds out of VMEM) and writes data/representative_vmem_check.csv, the target's old rows
replaced. tests/test_compile_study.py reads the record. Through the compile cache: the compiles a
search of the example already made are not made again.
"""
import argparse
import datetime
import importlib.util
import sys
from pathlib import Path

import pandas as pd

from tpu_matmul_repro.advise.cli import checked_config, compiler_for
from tpu_matmul_repro.experiments.compile_study import cache, extrapolate
from tpu_matmul_repro.experiments.compile_study.study import job_versions
from tpu_matmul_repro.experiments.compile_study.tpu_compile import Compiler
from tpu_matmul_repro.experiments.core.atomic_write import write_atomic
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.provenance import provenance

REPO = Path(__file__).resolve().parents[1]
# benchmarks/ is a folder of scripts, not a package: the example's blocks from their script, by path
_spec = importlib.util.spec_from_file_location("extrapolation", REPO / "benchmarks" / "extrapolation.py")
extrapolation = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(extrapolation)
OUT = REPO / "data" / "representative_vmem_check.csv"
# the blocks the example's search of 052df03 found out of VMEM at 7x's default limit
OUT_OF_VMEM = ((512, 4096, 2048), (1024, 4096, 1024), (2048, 1024, 1024), (2048, 4096, 256), (8192, 256, 512))
CASES = extrapolation.EXAMPLE + tuple(Case("v5", "bfloat16", *extrapolation.EXAMPLE_SHAPE, *blocks)
                                     for blocks in OUT_OF_VMEM)


def check(target: str, config: dict) -> list[dict]:
    compiler = compiler_for(target, config)
    python = compiler.get("python")
    options = dict(python=python, env=compiler.get("env"), toolchain=compiler["toolchain"] if python else "",
                   timeout_s=600)
    versions = job_versions(compiler.get("versions"))
    fit_options = extrapolate.fit_options(target, versions["libtpu_version"])
    rows = []
    plain = Compiler(target, cache=cache.for_target(target, False, versions), **options)
    profiled = Compiler(target, profile=True, cache=cache.for_target(target, True, versions), **options)
    with plain, profiled as profiler:
        for case in CASES:
            full = plain.compile(case)
            probe = extrapolate.representative(case, by_rows=bool(fit_options))
            small = profiler.compile(probe, None, fit_options)
            rows.append(dict(target=target, libtpu_version=versions["libtpu_version"], kernel=case.kernel,
                             dtype=case.dtype, m=case.m, k=case.k, n=case.n, bm=case.bm, bk=case.bk,
                             bn=case.bn, never_prefetched=extrapolate.never_prefetched(case, target),
                             full_status=full["status"], full_vmem_bytes=full["vmem_bytes"],
                             full_prefetched=full["prefetched"],
                             representative="x".join(map(str, probe.grid())),
                             representative_status=small["status"],
                             representative_vmem_bytes=small["vmem_bytes"],
                             fit_options=" ".join(f"{k}={v}" for k, v in (fit_options or {}).items())))
            same = (full["status"], full["vmem_bytes"]) == (small["status"], small["vmem_bytes"])
            print(f"{target} {case.label()}: {full['status']} {full['vmem_bytes']} / {small['status']} "
                  f"{small['vmem_bytes']}{'' if same else '  DIFFERENT'}", file=sys.stderr)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", default=["7x"])
    args = parser.parse_args(argv)
    config = checked_config(REPO / "config" / "config.yaml")
    new = pd.DataFrame([row for target in args.targets for row in check(target, config)])
    new = new.assign(git_sha=provenance()["git_sha"], date=datetime.date.today().isoformat())
    old = pd.read_csv(OUT, dtype={"libtpu_version": str}) if OUT.exists() else new.iloc[:0]
    table = pd.concat([old[~old.target.isin(args.targets)], new], ignore_index=True)
    write_atomic(OUT, lambda tmp: table.to_csv(tmp, index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
