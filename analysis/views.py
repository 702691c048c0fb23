"""The rows a figure draws and a report table prints, as data: which estimator's numbers (the timing
model's or libtpu's), which estimates are flagged, the out-of-sample scores of a figure's points and the
fidelity figure's panels. figures/plots.py draws them; report/tables.py prints the same rows."""
import pandas as pd

from tpu_matmul_repro.analysis.summaries import post_configs
from tpu_matmul_repro.experiments.core.units import flops, tflops


def modelled(rows: pd.DataFrame, column: str) -> tuple[pd.DataFrame, bool]:
    """Estimate rows with `tflops` replaced by the timing model's `column` (model_post_tflops: timed as
    the post did, for its figures; model_device_tflops: device time), where the table has it.
    Model-only estimates (no compiler cycles) keep no number here: only the generations figure draws
    them, in a style of their own."""
    if column not in rows or not rows[column].notna().any():
        return rows, False
    out = rows.copy()
    est = out.source == "estimate"
    out.loc[est, "tflops"] = out.loc[est, column]
    return out, True


def experiment_rows(rows: pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """The post's configurations with the numbers an experiment's figure draws and its report table
    prints (one estimator per view): the timing model's, timed as the post timed its calls (one
    blocked call), where the table has them; else libtpu's estimate. Returns (rows, modelled)."""
    return modelled(post_configs(rows), "model_post_tflops")


def flagged(rows: pd.DataFrame) -> pd.Series:
    """Estimates flagged as falling with size (an XLA cost-model artefact): every figure leaves them
    undrawn and says so in one line, and no fraction rests on them (summaries.best_vs_xla)."""
    if "estimate_nonmonotonic" not in rows:
        return pd.Series(False, index=rows.index)
    return (rows.source == "estimate") & rows.estimate_nonmonotonic.eq(True)


def out_of_sample(df: pd.DataFrame, model, experiment: str, dtype: str, target: str) -> dict | None:
    """The scores (analysis/validation.scores) of this figure's points predicted by the run's refits
    (`model`, a FittedModel) that left the post's figure out, as results/fidelity.csv has them; None
    where there are none."""
    from tpu_matmul_repro.analysis import timing_model as tm
    from tpu_matmul_repro.analysis import validation

    published = (df.source == "published") & (df.target == target)
    if model is None or "est_cycles" not in df or not published.any():
        return None
    folds = model.held_out(tm.reference_points(df, target=target)[0])
    if folds is None:
        return None
    mine = folds[(folds.experiment == experiment) & (folds.dtype == dtype)]
    return validation.scores(mine, mine.model_post_seconds) if len(mine) else None


def banded(rows: pd.DataFrame) -> bool:
    """Whether the figure shades the timing model's 80 % prediction interval (two sizes or more)."""
    if "model_post_tflops_lo80" not in rows:
        return False
    est = rows[(rows.source == "estimate") & rows.model_post_tflops_lo80.notna()]
    if est.empty:
        return False
    return bool(est.groupby(["kernel", "bm", "bk", "bn"], dropna=False).m.nunique().gt(1).any())


def experiment_kernel(df: pd.DataFrame, experiment: str) -> str | None:
    """The kernel an experiment's rows ran (v4: v3), None where the table has none of them."""
    kernels = df.kernel[df.experiment == experiment].dropna().unique()
    return str(kernels[0]) if len(kernels) else None


def versions(rows: pd.DataFrame, column: str = "libtpu_version") -> list[str]:
    """The distinct values of `column` among `rows` (the libtpu versions of the rows a figure drew)."""
    return sorted({str(v) for v in rows[column].dropna() if str(v)}) if column in rows else []


def fidelity_panels(df: pd.DataFrame, model, target: str) -> list[tuple[str, str, pd.DataFrame, dict]]:
    """(reference source, estimator, points, scores) per panel of the fidelity figure: the points
    results/fidelity.csv scores at sizes from 2048 up (analysis/validation.py: one point
    per configuration the post plotted in each of its figures, so XLA's baseline counts once per
    figure), with y the estimator's TFLOP/s: libtpu's raw estimate, and against the post also the
    timing model predicted by the run's refit (`model`, a FittedModel) that left the point's figure out."""
    from tpu_matmul_repro.analysis import timing_model as tm
    from tpu_matmul_repro.analysis import validation

    panels = []
    for other in ("published", "measured"):
        if not ((df.source == other) & (df.target == target)).any() or "est_cycles" not in df:
            continue
        points, _ = tm.reference_points(df, source=other, target=target)
        points = points[points.status == "ok"]
        if points.empty:
            continue
        work = flops(points.m.astype(float), points.k.astype(float), points.n.astype(float))
        predictions = [("compiler", points.seconds)]
        folds = model.held_out(points) if other == "published" and model is not None else None
        if folds is not None:
            predictions.append(("model", folds.model_post_seconds))
        large = points.m >= validation.LARGE
        if not large.any():  # fidelity.csv scores large problems only: none here, nothing to draw
            continue
        for estimator, seconds in predictions:
            part = points[large].assign(y=tflops(work, seconds)[large])
            panels.append((other, estimator, part, validation.scores(points[large], seconds[large])))
    return panels


def tied(rows: pd.DataFrame) -> pd.Series:
    """Per row: whether the advisor marked it a tie with the fastest. The advisor's table in memory
    leaves a non-tie's `tie` empty, its CSV read back leaves it NaN: both are no tie."""
    return rows.tie.fillna("").astype(str).str.strip() != ""
