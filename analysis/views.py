"""The rows a figure draws and a report table prints, as data: which estimator's numbers, which
estimates are flagged, a figure's out-of-sample scores and the fidelity figure's panels."""
import pandas as pd

from tpu_matmul_repro.analysis.summaries import post_configs
from tpu_matmul_repro.experiments.core.units import flops, tflops


def modelled(rows: pd.DataFrame, column: str) -> tuple[pd.DataFrame, bool]:
    """Estimate rows with `tflops` replaced by the timing model's `column` where the table has it."""
    if column not in rows or not rows[column].notna().any():
        return rows, False
    out = rows.copy()
    est = out.source == "estimate"
    out.loc[est, "tflops"] = out.loc[est, column]
    return out, True


def experiment_rows(rows: pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """(the post's configurations with the timing model's post-method numbers where the table has them,
    else libtpu's, whether modelled): what an experiment's figure draws and its table prints."""
    return modelled(post_configs(rows), "model_post_tflops")


def flagged(rows: pd.DataFrame) -> pd.Series:
    """Estimates flagged as falling with size (an XLA cost-model dip): no figure draws them."""
    if "estimate_nonmonotonic" not in rows:
        return pd.Series(False, index=rows.index)
    return (rows.source == "estimate") & rows.estimate_nonmonotonic.eq(True)


def out_of_sample(df: pd.DataFrame, model, experiment: str, dtype: str, target: str) -> dict | None:
    """validation.scores of this figure's points predicted by the refits without it; None without them."""
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
    """(reference source, estimator, points, scores) per panel of the fidelity figure: fidelity.csv's
    points from 2048 up, y the TFLOP/s of libtpu's estimate and (against the post) the held-out model."""
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
    """Per row: whether the advisor marked it a tie with the fastest (empty or NaN: no tie)."""
    return rows.tie.fillna("").astype(str).str.strip() != ""
