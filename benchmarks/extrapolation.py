"""How exact the compile study's cycle extrapolation is: for fixed block grids, libtpu's static profile
of the full grid against the fit on small grids that the compile study and the advisor use
(experiments/compile_study/extrapolate.py), per target.

    python3 benchmarks/extrapolation.py v5e v6e 7x

Writes data/extrapolation_check.csv (one row per target and case, the targets given replacing their
old rows): the full profile's cycles, the prediction, the error, and the seconds each took. The
advisor quotes a target's range of errors where it is wider than tests/test_compile_study.py allows
(2 %): its cycles are then ranked no more finely than that. On 7x the check also takes the blocks
of the advisor's example (EXAMPLE): about 20 minutes on a 2-core machine.
"""
import argparse
import datetime
import sys
import time
from pathlib import Path

import pandas as pd

from tpu_matmul_repro.advise.cli import checked_config, compiler_for
from tpu_matmul_repro.experiments.compile_study import extrapolate
from tpu_matmul_repro.experiments.compile_study.study import job_versions
from tpu_matmul_repro.experiments.compile_study.tpu_compile import Compiler
from tpu_matmul_repro.experiments.core.atomic_write import write_atomic
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.provenance import provenance

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "data" / "extrapolation_check.csv"
CASES = (  # 128 to 512 grid steps each: a full profile takes seconds on v5e and v6e
    Case("v3", "float32", 1024, 1024, 1024, 128, 128, 128),
    Case("v3", "float32", 2048, 2048, 2048, 256, 256, 256),
    Case("v5", "bfloat16", 2048, 2048, 2048, 256, 512, 512),
    Case("v5", "bfloat16", 4096, 4096, 4096, 512, 1024, 1024),
    Case("v5", "bfloat16", 4096, 4096, 4096, 256, 512, 1024),
    Case("v5", "bfloat16", 4096, 4096, 4096, 1024, 512, 1024),
    Case("v3", "float32", 2048, 2048, 2048, 256, 2048, 512),    # one k step
    Case("v5", "bfloat16", 2048, 2048, 2048, 256, 2048, 512),   # one k step
    Case("v5", "bfloat16", 4096, 4096, 4096, 512, 4096, 512),   # one k step
)
# Where a target's fit takes compiler options (extrapolate.FIT_OPTIONS: 7x), also the large problem of
# the advisor's 7x example (docs/advisor.md), with every block its search of 01e1025 ranked within the
# tie: the fit where the advisor's recommendation depends on it. Full profiles: 20-60 s each.
EXAMPLE_SHAPE = (8192, 4096, 14336)
EXAMPLE_BLOCKS = (
    (1024, 1024, 2048), (1024, 2048, 1024), (512, 2048, 2048), (2048, 2048, 512), (512, 4096, 1024),
    (1024, 1024, 1024), (1024, 512, 2048), (2048, 512, 1024), (1024, 4096, 512), (512, 1024, 2048),
    (2048, 1024, 512), (4096, 512, 512), (1024, 4096, 256), (512, 2048, 1024), (1024, 2048, 512),
    (512, 4096, 512), (1024, 512, 1024), (1024, 256, 2048), (2048, 256, 1024), (512, 512, 2048),
    (2048, 512, 512), (4096, 256, 512), (512, 4096, 256), (512, 1024, 1024), (1024, 1024, 512),
)
EXAMPLE = tuple(Case("v5", "bfloat16", *EXAMPLE_SHAPE, *blocks) for blocks in EXAMPLE_BLOCKS)


def cases_for(target: str, libtpu: str) -> list[tuple[str, Case]]:
    """(case set, case) pairs checked on `target` with `libtpu`."""
    fixed = [("fixed", case) for case in CASES]
    if extrapolate.fit_options(target, libtpu) is None:
        return fixed
    return fixed + [("advisor example", case) for case in EXAMPLE]


def check(target: str, config: dict) -> list[dict]:
    compiler = compiler_for(target, config)
    python = compiler.get("python")
    options = dict(python=python, env=compiler.get("env"), toolchain=compiler["toolchain"] if python else "")
    libtpu = job_versions(compiler.get("versions"))["libtpu_version"]
    rows = []
    with Compiler(target, profile=True, timeout_s=1800, **options) as profiler:
        for case_set, case in cases_for(target, libtpu):
            start = time.perf_counter()
            full = profiler.compile(case)
            full_s = time.perf_counter() - start
            if full["status"] != "ok":
                print(f"{target} {case.label()}: {full['status']}, skipped", file=sys.stderr)
                continue
            start = time.perf_counter()
            # as the compile study does (study.job_rows): where the target has fit options, a case whose
            # full size is prefetched is profiled whole (no fit to check), the others fitted with them
            fit_options = extrapolate.fit_options(target, libtpu)
            whole = bool(fit_options and full["prefetched"])
            by_rows = bool(fit_options)  # as CycleEstimator.cycles fits
            points = [] if whole else [(c, profiler.compile(c, None, fit_options)["est_cycles"])
                                       for c in extrapolate.reduced_cases(case, by_rows)]
            fit_s = time.perf_counter() - start
            predicted = (full["est_cycles"] if whole
                         else extrapolate.predict(extrapolate.fit(points, by_rows), case, by_rows))
            rows.append(dict(target=target, libtpu_version=libtpu, case_set=case_set, kernel=case.kernel,
                             dtype=case.dtype,
                             m=case.m, k=case.k, n=case.n, bm=case.bm, bk=case.bk, bn=case.bn,
                             grid_steps=extrapolate.grid_counts(case)[1], full_cycles=full["est_cycles"],
                             predicted_cycles=predicted,
                             error_pct=round(100 * (predicted / full["est_cycles"] - 1), 2),
                             small_grids=len(points),
                             grids=" ".join("x".join(map(str, c.grid())) for c, _ in points),
                             cycles_method="profiled" if whole else "extrapolated",
                             prefetched=full["prefetched"],
                             fit_options="" if whole else said(fit_options),
                             full_s=round(full_s, 1), fit_s=round(fit_s, 1)))
            print(f"{target} {case.label()}: {rows[-1]['error_pct']:+.2f} %", file=sys.stderr)
    return rows


def said(options: dict | None) -> str:
    return " ".join(f"{k}={v}" for k, v in (options or {}).items())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="+")
    args = parser.parse_args(argv)
    config = checked_config(REPO / "config" / "config.yaml")
    new = pd.DataFrame([row for target in args.targets for row in check(target, config)])
    meta = dict(git_sha=provenance()["git_sha"], date=datetime.date.today().isoformat())
    new = new.assign(**meta)
    old = pd.read_csv(OUT, dtype={"libtpu_version": str}) if OUT.exists() else new.iloc[:0]
    if "case_set" not in old:  # a record from before the advisor's example was checked
        old.insert(2, "case_set", "fixed")
    table = pd.concat([old[~old.target.isin(args.targets)], new], ignore_index=True)
    write_atomic(OUT, lambda tmp: table.to_csv(tmp, index=False))
    print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
