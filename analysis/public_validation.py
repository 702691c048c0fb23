"""The timing model scored on public TPU matmul measurements (data/public_measurements.csv), never
fitted on them: each row modelled as a case of a project kernel from its own compile, or left out
with the reason (docs/timing-model.md, "Scored on public measurements, never fitted")."""
import dataclasses

import numpy as np
import pandas as pd

from tpu_matmul_repro.analysis import intervals, model_columns, validation
from tpu_matmul_repro.analysis import timing_model as tm
from tpu_matmul_repro.analysis.fitted_model import PUBLISHED, is_refit
from tpu_matmul_repro.analysis.public_measurements import load
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.chips import CHIPS, POST_CHIP, generation_order
from tpu_matmul_repro.experiments.core.jobs import Job
from tpu_matmul_repro.experiments.core.traffic import OUT_DTYPE
from tpu_matmul_repro.kernels import is_pallas

EXPERIMENT = "public"  # the experiment name of the public cases' estimate rows
COMPARED_WITH = "public"  # fidelity.csv's compared_with for these scores
VALIDATION = "public measurements, never fitted"
ESTIMATOR = "model"
# the project's kernel for each public kernel (a Pallas row needs its blocks)
KERNELS = {"xla": "xla", "pallas": "v5"}
VARIANTS = {  # why a variant is not modelled; other variants: not a plain matmul
    "fused_relu": "a fused ReLU: not a plain matmul",
    "transpose_rhs": "a transposed right-hand side: not the kernels' layout",
    "replicated_8_chips": "replicated on 8 chips: each chip's time is the slowest of 8",
}
MANUAL_DMA = "manual_dma"  # variants of hand-written kernels with manual DMA, not a BlockSpec grid
HOST, DEVICE = "host", "device"  # how a row was timed: a blocking call's wall time, or profiler events
LEVELS = validation.LEVELS


def skip_reason(row) -> str:
    """Why a public row cannot be modelled ("" where it can)."""
    if row.generation not in CHIPS:
        return f"generation {row.generation}: the project has no chip of it (experiments/core/chips.py)"
    if row.variant != "plain":
        if row.variant.startswith(MANUAL_DMA):
            return f"variant {row.variant}: a hand-written kernel with manual DMA, not a BlockSpec grid"
        return f"variant {row.variant}: {VARIANTS.get(row.variant, 'not a plain matmul')}"
    if row.out_dtype != OUT_DTYPE[row.dtype]:
        return (f"out dtype {row.out_dtype} differs from the project's kernels' ({row.dtype} -> "
                f"{OUT_DTYPE[row.dtype]})")
    if row.kernel == "pallas":
        blocks = [row.bm, row.bk, row.bn]
        if any(pd.isna(b) for b in blocks):
            return "a Pallas kernel without stated blocks"
        if any(dim % int(b) for dim, b in zip((row.m, row.k, row.n), blocks, strict=True)):
            return "its blocks do not divide the shape"
    return ""


def case_of(row) -> Case:
    blocks = [None if pd.isna(b) else int(b) for b in (row.bm, row.bk, row.bn)]
    return Case(KERNELS[row.kernel], row.dtype, int(row.m), int(row.k), int(row.n), *blocks)


def planned(table: pd.DataFrame) -> pd.DataFrame:
    """The public table with `skip_reason` and, for rows that can be modelled, `case`."""
    reasons = [skip_reason(r) for r in table.itertuples()]
    cases = [None if why else case_of(r) for r, why in zip(table.itertuples(), reasons, strict=True)]
    return table.assign(skip_reason=reasons, case=cases)


def compile_jobs(table: pd.DataFrame, *, timeout_s: float, toolchain: str) -> dict[str, Job]:
    """One compile job per generation: its modelled rows' distinct cases, plain compiles at the chip's
    default VMEM limit, as the compile study's own."""
    plan = planned(table)
    jobs = {}
    for target in sorted(set(plan.generation[plan.case.notna()])):
        mine = set(plan.case[plan.case.notna() & (plan.generation == target)])
        cases = tuple(sorted(mine, key=lambda c: (c.kernel, c.dtype, c.m, c.k, c.n, c.bm or 0, c.bk or 0,
                                                  c.bn or 0)))
        jobs[target] = Job(target=target, experiment=EXPERIMENT, cases=cases, timeout_s=timeout_s,
                           profile_max_steps=0, raise_limits_for=cases, toolchain=toolchain,
                           static_profile=False)
    return jobs


def compile_estimates(job: Job, compiler=None, log=None) -> pd.DataFrame:
    """The estimate rows of a job's cases: the compile study's, or `compiler`'s (compile(case, limit))."""
    from tpu_matmul_repro.experiments.compile_study import study
    from tpu_matmul_repro.experiments.core.runtime import Progress
    from tpu_matmul_repro.experiments.core.schema import frame

    if compiler is None:
        return study.run_jobs([job])
    import logging

    progress = Progress(len(job.cases), log or logging.getLogger(__name__))
    return frame(study.job_rows(job, compiler, compiler, progress), study.job_versions(None))


def default_fits(run: pd.DataFrame, model) -> tuple[dict, "intervals.Band | None", str]:
    """The run's published fit and its refits (no measured fit), its band, and why there is no fit."""
    fits = {name: value for name, value in model.fits.items() if name == PUBLISHED or is_refit(name)}
    if PUBLISHED not in fits:
        points, _ = tm.reference_points(run, source="published", target=POST_CHIP)
        return {}, None, f"not fitted: {len(points)} published points pair with this run's estimates"
    return fits, model.band, ""


def _key(df: pd.DataFrame) -> list:
    return [(t, kernel, d, int(m), int(k), int(n), *(None if pd.isna(b) else int(b) for b in blocks))
            for t, kernel, d, m, k, n, *blocks in zip(df.target, df.kernel, df.dtype, df.m, df.k, df.n,
                                                      df.bm, df.bk, df.bn, strict=True)]


def modelled_estimates(estimates: pd.DataFrame, run: pd.DataFrame, fits: dict, band) -> pd.DataFrame:
    """The public estimate rows with the pipeline's modelled columns and bands, modelled beside the run's
    XLA estimates of the same targets, so a cost-model dip is flagged as in the table."""
    xla = run[(run.source == "estimate") & ~is_pallas(run.kernel) & run.target.isin(set(estimates.target))]
    both = pd.concat([estimates.assign(_public=True), xla.assign(_public=False)], ignore_index=True)
    out = model_columns.modelled(both, fits, band)
    return out[out._public.eq(True)].drop(columns="_public").reset_index(drop=True)


def scores_table(table: pd.DataFrame, estimates: pd.DataFrame, run: pd.DataFrame, model) -> pd.DataFrame:
    """One row per public row: its measurement, the model's prediction, band and error, or why it is not
    modelled (skip_reason); `estimates`: the public cases' compiles; `model`: the run's FittedModel."""
    plan = planned(table)
    fits, band, why = (default_fits(run, model) if len(run)
                       else ({}, None, "not fitted: the run has no table"))
    model = modelled_estimates(estimates, run, fits, band) if fits and len(estimates) else estimates.iloc[:0]
    by_case = dict(zip(_key(model), model.to_dict("records"), strict=True)) if len(model) else {}
    rows = []
    for r, case in zip(plan.itertuples(), plan.case, strict=True):
        timing = DEVICE if r.dispatch_included == "no" else HOST
        time = "device" if timing == DEVICE else "post"
        row = dict(source=r.source, generation=r.generation, kernel=r.kernel, variant=r.variant, bm=r.bm,
                   bk=r.bk, bn=r.bn, dtype=r.dtype, out_dtype=r.out_dtype, m=r.m, k=r.k, n=r.n,
                   shape_class=r.shape_class, dispatch_included=r.dispatch_included, timing=timing,
                   settings=r.settings, locator=r.locator, measured_seconds=r.seconds,
                   modelled_kernel=case.kernel if case else "", skip_reason=r.skip_reason)
        est = by_case.get((r.generation, *dataclasses.astuple(case))) if case else None
        if case and not fits:
            row["skip_reason"] = why
        elif case and est is None:
            row["skip_reason"] = "not compiled"
        elif case:
            row.update(compile_status=est["status"], est_cycles=est["est_cycles"],
                       vmem_bytes=est["vmem_bytes"], xla_estimate_method=est.get("xla_estimate_method", ""),
                       model_fit=est.get("model_fit", ""))
            predicted = est.get(f"model_{time}_seconds", np.nan)
            if est["status"] != "ok":
                row["skip_reason"] = f"compile {est['status']}: {str(est['error'])[:200]}"
            elif pd.isna(predicted):
                row["skip_reason"] = "the compile gave no cost-model cycles"
            else:
                row.update(_prediction(est, time, r.seconds))
        rows.append(row)
    return pd.DataFrame(rows).reindex(columns=SCORE_COLUMNS)


def _prediction(est: dict, time: str, measured: float) -> dict:
    """The modelled time of the row's timing, its error and its bands (the pipeline's interval columns)."""
    seconds = float(est[f"model_{time}_seconds"])
    out = dict(model_seconds=seconds, log_ratio=float(np.log(seconds / measured)),
               tflops_ratio=measured / seconds)
    out["abs_log_ratio"] = abs(out["log_ratio"])
    for level in LEVELS:
        s = validation.suffix(level)
        lo, hi = est[f"model_{time}_seconds_lo{s}"], est[f"model_{time}_seconds_hi{s}"]
        out[f"halfwidth{s}"] = float(np.log(hi / seconds)) if pd.notna(hi) else np.nan
        out[f"lo{s}"], out[f"hi{s}"] = lo, hi
        out[f"inside{s}"] = bool(lo <= measured <= hi) if pd.notna(lo) and pd.notna(hi) else np.nan
    return out


SCORE_COLUMNS = [
    "source", "generation", "kernel", "variant", "bm", "bk", "bn", "dtype", "out_dtype", "m", "k", "n",
    "shape_class", "dispatch_included", "timing", "settings", "locator", "measured_seconds",
    "modelled_kernel", "skip_reason", "compile_status", "est_cycles", "vmem_bytes", "xla_estimate_method",
    "model_fit", "model_seconds", "log_ratio", "abs_log_ratio", "tflops_ratio",
    *[f"{c}{validation.suffix(level)}" for level in LEVELS for c in ("halfwidth", "lo", "hi", "inside")],
]
SCOPES = (("dtype", ["dtype"]), ("shape class", ["shape_class"]),
          ("dtype, shape class", ["dtype", "shape_class"]), ("timing", ["timing"]), ("source", ["source"]))
ALL = "all"


def fidelity_rows(scores: pd.DataFrame) -> pd.DataFrame:
    """fidelity.csv's rows for the public scores, per generation and over all, by SCOPES."""
    rows = []
    for target in [*sorted(set(scores.generation), key=generation_order), ALL]:
        mine = scores if target == ALL else scores[scores.generation == target]
        scored = mine[mine.model_seconds.notna()]
        reasons = mine[mine.model_seconds.isna()].skip_reason.fillna("").value_counts()
        left = "; ".join(f"{reason}: {n}" for reason, n in reasons.items())
        common = dict(target=target, compared_with=COMPARED_WITH, estimator=ESTIMATOR, validation=VALIDATION,
                      note="", n_left_out=int(reasons.sum()), left_out=left)
        groups = [(ALL, ALL, scored)] + [
            (scope, ", ".join(map(str, key if isinstance(key, tuple) else (key,))), part)
            for scope, columns in SCOPES
            for key, part in scored.groupby(columns if len(columns) > 1 else columns[0], sort=True)]
        for scope, group, part in groups:
            rows.append(dict(common, scope=scope, group=group, **group_scores(part)))
    return pd.DataFrame(rows, columns=FIDELITY_COLUMNS)


def group_scores(part: pd.DataFrame) -> dict:
    """validation.scores of the group, and per level the widest half-width and the coverage."""
    points = pd.DataFrame({"ref_seconds": part.measured_seconds.astype(float)})
    out = validation.scores(points, part.model_seconds.astype(float))
    for level in LEVELS:
        s = validation.suffix(level)
        out[f"halfwidth{s}"] = float(part[f"halfwidth{s}"].max()) if len(part) else np.nan
        out[f"coverage{s}"] = float(part[f"inside{s}"].astype(float).mean()) if len(part) else np.nan
    return out


FIDELITY_COLUMNS = ["target", "compared_with", "estimator", "validation", "scope", "group", "n",
                    "median_abs_log_ratio", "median_ratio", "spearman", "halfwidth80", "coverage80",
                    "halfwidth95", "coverage95", "note", "n_left_out", "left_out"]


def score(run: pd.DataFrame, estimates: pd.DataFrame, model, table: pd.DataFrame | None = None):
    """(scores, fidelity rows) of the public table against the run's model (`model`: its fits)."""
    table = load() if table is None else table
    scores = scores_table(table, estimates, run, model)
    return scores, fidelity_rows(scores)

