"""How well the timing model predicts the post: cross-validated, beside the raw compiler's estimate.

Two schemes, each scoring every point by a fit that did not contain it:
  leave one experiment out: fit on the points of four of the post's figures, predict the fifth's;
    a configuration the held-out figure also shows elsewhere (XLA's baseline, v4's 128-blocks = v3's)
    leaves the fit too, so no fit has seen a point it predicts, under any name;
  leave one size out: fit on every size but one, predict that one.
The result is results/fidelity.csv: one row per estimator, validation, scope and group. The rows of
leave one experiment out also check the prediction intervals (experiments/analysis/intervals.py): the
band's half-width in ln (halfwidth80, halfwidth95) and the share of the group's points inside the band
sized without their own figure (coverage80, coverage95): held-out points only.
"""
import math

import numpy as np
import pandas as pd

from tpu_matmul_repro.experiments.analysis import timing_model as tm
from tpu_matmul_repro.experiments.analysis.summaries import MIN_RANK_POINTS
from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.experiments.core.schema import INTERVAL_LEVELS

# Prediction-interval levels (experiments/analysis/intervals.py sizes the bands; here they are checked)
LEVELS = tuple(level / 100 for level in INTERVAL_LEVELS)


def suffix(level: float) -> str:
    return f"{round(100 * level)}"


def conformal_quantile(errors, level: float) -> float:
    """The split-conformal quantile of absolute errors: the ceil((n + 1) level)-th smallest."""
    e = np.sort(np.asarray(errors, dtype=float)[~np.isnan(np.asarray(errors, dtype=float))])
    rank = math.ceil((len(e) + 1) * level)
    return float(e[rank - 1]) if 0 < rank <= len(e) else math.inf


def coverage(errors: pd.DataFrame, level: float) -> pd.Series:
    """Per point: inside the band sized by the other folds' errors (its own fold's never count)."""
    inside = pd.Series(False, index=errors.index)
    for fold in errors.fold.unique():
        mine = errors.fold == fold
        q = conformal_quantile(errors.error[~mine], level)
        inside[mine] = errors.error[mine] <= q
    return inside


SCHEMES = {"leave one experiment out": "experiment", "leave one size out": "m"}
LARGE = 2048  # the second benchmark: sizes from 2048 up


def folds(points: pd.DataFrame, column: str):
    """(held-out value, train index, test index) per fold; train never holds a test configuration."""
    configs = pd.Series([str(c) for c in points[tm.CONFIG].itertuples(index=False)], index=points.index)
    for value in sorted(points[column].unique(), key=str):
        test = points.index[points[column] == value]
        train = points.index[~configs.isin(set(configs[test]))]
        yield value, train, test


def cross_validate(points: pd.DataFrame, column: str, fit=None) -> pd.DataFrame:
    """Points with model_post_seconds predicted by fits without them; `fold` names the held-out group.

    A fold whose training set is too small raises TooFewPoints naming the fold.
    """
    fit = fit or tm.fit_published
    parts = []
    for value, train, test in folds(points, column):
        if set(train) & set(test):
            raise AssertionError(f"fold {column}={value}: a point is in its own fit")
        try:
            result = fit(points.loc[train])
        except tm.TooFewPoints as e:
            raise tm.TooFewPoints(f"fold {column}={value}: {e}") from None
        parts.append(tm.predict(points.loc[test], result.constants).assign(fold=str(value)))
    return pd.concat(parts).sort_index()


def scores(points: pd.DataFrame, predicted: pd.Series) -> dict:
    """n, median |ln(predicted / reference)|, median TFLOP/s ratio and Spearman of TFLOP/s."""
    log_ratio = np.log(predicted / points.ref_seconds)  # time ratio; TFLOP/s ratio is its inverse
    ok = log_ratio.notna()
    n = int(ok.sum())
    return dict(
        n=n,
        median_abs_log_ratio=float(np.median(np.abs(log_ratio[ok]))) if n else np.nan,
        median_ratio=float(np.exp(-np.median(log_ratio[ok]))) if n else np.nan,
        spearman=float((1 / predicted[ok]).corr(1 / points.ref_seconds[ok], method="spearman"))
        if n >= MIN_RANK_POINTS else np.nan,
    )


def groups(points: pd.DataFrame):
    yield "all", "all", points.index
    yield f"size >= {LARGE}", "all", points.index[points.m >= LARGE]
    for experiment in sorted(points.experiment.unique()):
        yield "experiment", experiment, points.index[points.experiment == experiment]
    for size in sorted(points.m.unique()):
        yield "size", str(size), points.index[points.m == size]


def fidelity_table(df: pd.DataFrame, target: str = POST_CHIP) -> pd.DataFrame:
    """The model (in-sample and both cross-validations) and the raw compiler against the post.

    Every row states n (points scored) and the reference rows left out (of the scores, or of the
    fits only), by reason. Raises
    TooFewPoints when the published points cannot support a fit (fewer than 6).
    """
    points, left_out = tm.reference_points(df, source="published", target=target)
    if len(points) == 0:
        return pd.DataFrame()
    left = "; ".join(f"{reason}: {n}" for reason, n in left_out.items())
    full = tm.fit_published(points)
    predictions = {
        ("compiler", "none (libtpu's estimate)"): points.seconds,
        ("model", "in-sample (fitted on every point)"): tm.predict(points, full.constants).model_post_seconds,
    }
    notes = {}
    for name, column in SCHEMES.items():
        try:
            predictions[("model", name)] = cross_validate(points, column).model_post_seconds
        except tm.TooFewPoints as e:  # a small run: this validation cannot be made; the table says why
            predictions[("model", name)] = pd.Series(np.nan, index=points.index)
            notes[("model", name)] = f"not validated: {e}"
    bands = interval_checks(points, predictions[("model", "leave one experiment out")])
    rows = []
    for (estimator, validation), predicted in predictions.items():
        for scope, group, index in groups(points):
            checked = bands if validation == "leave one experiment out" else None
            rows.append(dict(target=target, compared_with="published", estimator=estimator,
                             validation=validation, scope=scope, group=group,
                             **scores(points.loc[index], predicted.loc[index]),
                             **interval_scores(checked, index),
                             note=notes.get((estimator, validation), ""),
                             n_left_out=sum(v for r, v in left_out.items() if not r.startswith("scored")),
                             left_out=left))
    return pd.DataFrame(rows)


def interval_checks(points: pd.DataFrame, predicted: pd.Series) -> pd.DataFrame | None:
    """Per point of the leave-one-experiment-out predictions: whether it lies inside each level's band
    sized by the other figures' errors only (coverage), and the table's band (all errors)."""
    error = np.abs(np.log(predicted / points.ref_seconds))
    if error.isna().all():
        return None
    errors = pd.DataFrame({"error": error, "fold": points.experiment.astype(str)}).dropna()
    out = pd.DataFrame(index=errors.index)
    for level in LEVELS:
        s = suffix(level)
        out[f"coverage{s}"] = coverage(errors, level)
        out.attrs[f"halfwidth{s}"] = conformal_quantile(errors.error, level)
    return out


def interval_scores(checked: pd.DataFrame | None, index) -> dict:
    """A group's share of held-out points inside the band (coverage<L>) and the band's half-width in ln
    (halfwidth<L>); NaN for validations that do not size the bands."""
    out = {}
    for level in LEVELS:
        s = suffix(level)
        mine = checked.index.intersection(index) if checked is not None else []
        out[f"halfwidth{s}"] = checked.attrs[f"halfwidth{s}"] if checked is not None else np.nan
        out[f"coverage{s}"] = float(checked.loc[mine, f"coverage{s}"].mean()) if len(mine) else np.nan
    return out


def headline(table: pd.DataFrame) -> dict:
    """The benchmark numbers: per estimator and validation, overall and from 2048 up, Spearman, and the
    worst experiment's median."""
    out = {}
    for (estimator, validation), part in table.groupby(["estimator", "validation"], sort=False):
        if part.n.max() == 0:  # not validated (too few points): nothing to headline
            continue
        by = part.set_index(["scope", "group"])
        experiments = part[part.scope == "experiment"]
        out[(estimator, validation)] = dict(
            n=int(by.loc[("all", "all")].n), all=by.loc[("all", "all")].median_abs_log_ratio,
            large=by.loc[(f"size >= {LARGE}", "all")].median_abs_log_ratio,
            n_large=int(by.loc[(f"size >= {LARGE}", "all")].n),
            spearman=by.loc[("all", "all")].spearman,
            worst_experiment=experiments.median_abs_log_ratio.max(),
            per_experiment=dict(zip(experiments.group, experiments.median_abs_log_ratio, strict=True)))
    return out
