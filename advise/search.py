"""Compile a problem's candidate blocks and XLA's matmul for a target, and model them.

Candidates are compiled cheapest first by a lower bound on their modelled time (the model without
compiler cycles: peak and bandwidth alone, which the full model never undercuts); once some have
compiled, a candidate whose lower bound lies beyond the best modelled time times the 80 % interval's
factor is not compiled: it can neither win nor tie (a tie is a time within that factor of the best).
Blocks whose buffers alone exceed the default scoped-VMEM limit are out of VMEM without a compile.
The compiles themselves are the compile study's (experiments/compile_study/study.py: representative
small grids for the VMEM verdict, cycles extrapolated from small grids, dominated blocks skipped, the
compile cache).
"""
import logging
import math

import numpy as np
import pandas as pd

from tpu_matmul_repro.advise.candidates import candidates
from tpu_matmul_repro.experiments.analysis import timing_model as tm
from tpu_matmul_repro.experiments.compile_study.study import run_jobs
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.chips import MiB, chip
from tpu_matmul_repro.experiments.core.jobs import Job
from tpu_matmul_repro.experiments.core.traffic import min_vmem_bytes
from tpu_matmul_repro.experiments.core.units import flops, tflops

log = logging.getLogger(__name__)
FIRST = 6  # candidates compiled before the bound prunes the rest
PRUNED = "pruned"  # status of a candidate not compiled because it cannot come within the interval


def lower_bound(case: Case, target: str, k: tm.Constants) -> float:
    row = pd.Series(dict(kernel=case.kernel, dtype=case.dtype, m=case.m, k=case.k, n=case.n, bm=case.bm,
                         bk=case.bk, bn=case.bn, target=target, est_cycles=0.0))
    return tm.device_seconds(tm.features(row, cycles=0.0), k)


def beyond_scoped_limit(target: str, case: Case) -> bool:
    """Blocks whose one buffer each already exceeds the default scoped-VMEM limit: out of VMEM at that
    limit without a compile (the pipeline double-buffers most of them and adds scratch)."""
    return min_vmem_bytes(case) > chip(target).default_vmem_limit_bytes


def oom_rows(target: str, cases) -> pd.DataFrame:
    c = chip(target)
    return pd.DataFrame([dict(
        source="estimate", target=target, kernel=x.kernel, dtype=x.dtype, m=x.m, k=x.k, n=x.n, bm=x.bm,
        bk=x.bk, bn=x.bn, status="vmem_oom", vmem_bytes=min_vmem_bytes(x),
        vmem_limit_bytes=c.default_vmem_limit_bytes, oom_limit_bytes=c.default_vmem_limit_bytes,
        vmem_method="block_bound",
        error=f"not compiled: its blocks alone need {min_vmem_bytes(x) / MiB:.2f} MiB, more than the default "
              f"scoped limit of {c.default_vmem_limit_bytes / MiB:.0f} MiB (a lower bound from the block "
              "shapes)") for x in cases])


def xla_cases(dtype: str, shape) -> list[Case]:
    """XLA's matmul at the shape and at its halvings (the same aspect): the smaller problems the
    monotone envelope needs (timing_model.envelope_cycles)."""
    m, k, n = shape
    out = [Case("xla", dtype, m, k, n)]
    for _ in range(2):
        if m % 2 or k % 2 or n % 2 or min(m, k, n) < 256:
            break
        m, k, n = m // 2, k // 2, n // 2
        out.append(Case("xla", dtype, m, k, n))
    return out[::-1]


def compile_cases(target: str, cases, compiler: dict, settings: dict) -> pd.DataFrame:
    job = Job(target=target, experiment="advice", cases=tuple(cases), skip_dominated=True,
              toolchain=compiler["toolchain"], static_profile=compiler["static_profile"], **settings)
    return run_jobs([job], python=compiler.get("python"), env=compiler.get("env"),
                    versions=compiler.get("versions"))


def modelled(rows: pd.DataFrame, k: tm.Constants) -> pd.DataFrame:
    """Modelled device and post-method seconds of the ok rows: XLA's dips replaced by the envelope,
    Pallas rows without cycles model-only (labelled)."""
    rows = rows.copy()
    envelope = tm.envelope_cycles(rows)
    rows["xla_estimate_method"] = ""
    xla = (rows.kernel == "xla") & (rows.status == "ok")
    rows.loc[xla, "xla_estimate_method"] = np.where(envelope[xla].notna(), tm.MONOTONE_ENVELOPE,
                                                    tm.COST_MODEL)
    device, basis = [], []
    for index, row in rows.iterrows():
        if row.status != "ok":
            device.append(np.nan)
            basis.append("")
            continue
        cycles = envelope[index] if not pd.isna(envelope[index]) else None
        if row.kernel != "xla" and pd.isna(row.est_cycles):
            cycles = 0.0
        device.append(tm.device_seconds(tm.features(row, cycles=cycles), k))
        basis.append("model only, no compiler cycles" if cycles == 0.0 else "compiler cycles")
    rows["model_device_seconds"] = device
    rows["model_post_seconds"] = rows.model_device_seconds + k.call_seconds
    rows["model_basis"] = basis
    return rows


def search(shape, dtype: str, target: str, kernel: str, model, compiler: dict, settings: dict):
    """(candidate rows, XLA rows) of one problem on one target, modelled."""
    k = model.constants
    q = model.band.halfwidth[0.8]
    cases = candidates(kernel, dtype, shape, target)
    bounds = {c: lower_bound(c, target, k) for c in cases}
    ordered = sorted(cases, key=lambda c: (bounds[c], c.bm * c.bk * c.bn))
    sure_oom = [c for c in ordered if beyond_scoped_limit(target, c)]
    todo = [c for c in ordered if c not in sure_oom]
    frames, pending_xla = [oom_rows(target, sure_oom)], xla_cases(dtype, shape)
    best, reach = math.nan, math.inf
    while todo or pending_xla:
        # until one candidate has a time, FIRST at a time; then every one that could win or tie
        batch = todo[:FIRST] if math.isnan(best) else [c for c in todo if bounds[c] <= reach]
        todo = todo[len(batch):] if math.isnan(best) else []
        if not batch and not pending_xla:
            break
        frames.append(modelled(compile_cases(target, batch + pending_xla, compiler, settings), k))
        pending_xla = []
        times = pd.concat(frames, ignore_index=True)
        best = times[times.kernel != "xla"].model_device_seconds.min()
        best = math.nan if pd.isna(best) else float(best)
        reach = best * math.exp(q) if not math.isnan(best) else math.inf
    rows = pd.concat(frames, ignore_index=True)
    compiled = set(zip(rows.bm, rows.bk, rows.bn, rows.m, rows.k, rows.n, strict=True))
    pruned = [c for c in ordered if (c.bm, c.bk, c.bn, c.m, c.k, c.n) not in compiled]
    log.info("%s %s: %d candidates, %d out of VMEM by their blocks alone, %d compiled, %d pruned by the "
             "bound", target, shape, len(cases), len(sure_oom), len(cases) - len(pruned) - len(sure_oom),
             len(pruned))
    out = [rows]
    if pruned:
        out.append(pd.DataFrame([dict(
            target=target, kernel=c.kernel, dtype=c.dtype, m=c.m, k=c.k, n=c.n, bm=c.bm, bk=c.bk, bn=c.bn,
            status=PRUNED, lower_bound_seconds=bounds[c],
            error=f"not compiled: even without compiler cycles the model gives {bounds[c] * 1e3:.3f} ms, "
                  f"beyond the best compiled ({best * 1e3:.3f} ms) times x{math.exp(q):.2f} (the 80 % "
                  "interval): it can neither win nor tie") for c in pruned]))
    table = pd.concat(out, ignore_index=True)
    work = flops(*shape)
    for time in ("device", "post"):
        table[f"model_{time}_tflops"] = tflops(work, table[f"model_{time}_seconds"])
    at_shape = (table.m == shape[0]) & (table.k == shape[1]) & (table.n == shape[2])
    return table[at_shape & (table.kernel != "xla")].reset_index(drop=True), \
        table[at_shape & (table.kernel == "xla")].reset_index(drop=True)
