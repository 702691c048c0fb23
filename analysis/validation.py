"""How well the timing model predicts the post: cross-validated (leave one experiment out, leave one
size out) beside the raw compiler's estimate, with the prediction bands' nested coverage
(results/fidelity.csv; the method: docs/timing-model.md)."""
import dataclasses
import math

import numpy as np
import pandas as pd

from tpu_matmul_repro.analysis import timing_model as tm
from tpu_matmul_repro.analysis.summaries import MIN_RANK_POINTS, blocks_text
from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.experiments.core.schema import INTERVAL_LEVELS

LEVELS = tuple(level / 100 for level in INTERVAL_LEVELS)


def suffix(level: float) -> str:
    return f"{round(100 * level)}"


def conformal_quantile(errors, level: float) -> float:
    """The split-conformal quantile of absolute errors: the ceil((n + 1) level)-th smallest."""
    e = np.sort(np.asarray(errors, dtype=float)[~np.isnan(np.asarray(errors, dtype=float))])
    rank = math.ceil((len(e) + 1) * level)
    return float(e[rank - 1]) if 0 < rank <= len(e) else math.inf


# Size bands of the conditional intervals, by the problem's size (the cube root of m k n): the
# timing model's held-out error at 8192 is about three times that below (fidelity.csv, by size).
SIZE_EDGES = (4096, 8192)
SIZE_BANDS = ("below 4096", "4096 to 8191", "8192 and above")


def size_band(m, k, n) -> pd.Series | str:
    """The size band (SIZE_BANDS) of problems m x k x n (scalars or Series)."""
    size = np.cbrt(np.asarray(m, dtype=float) * np.asarray(k, dtype=float) * np.asarray(n, dtype=float))
    bands = np.array(SIZE_BANDS, dtype=object)[np.digitize(np.round(size, 6), SIZE_EDGES)]
    return pd.Series(bands, index=m.index) if isinstance(m, pd.Series) else str(bands)


def band_scales(errors: pd.DataFrame) -> dict:
    """Per size band: the root mean square of its errors; a band without errors takes the widest's."""
    scales = {band: float(np.sqrt(np.mean(np.square(part.error))))
              for band, part in errors.groupby("band") if len(part) and (part.error > 0).any()}
    widest = max(scales.values(), default=np.nan)
    return {band: scales.get(band, widest) for band in SIZE_BANDS}


def conditional_halfwidths(errors: pd.DataFrame, level: float) -> dict:
    """Per size band: the level's half-width in ln, the conformal quantile of the normalised errors
    times the band's scale."""
    scales = band_scales(errors)
    score = errors.error / errors.band.map(scales)
    q = conformal_quantile(score, level)
    return {band: q * scale for band, scale in scales.items()}


def coverage(errors: pd.DataFrame, level: float, nested: dict | None = None) -> pd.Series:
    """Per point: inside the band sized without its own fold: `nested`'s (nested_halfwidths) where it
    has the fold, else from the other folds' errors (per size band where errors has `band`)."""
    inside = pd.Series(False, index=errors.index)
    for fold in errors.fold.unique():
        mine = errors.fold == fold
        if nested and fold in nested:
            q = errors.band[mine].map(nested[fold][level])
        elif "band" in errors:
            widths = conditional_halfwidths(errors[~mine], level)
            q = errors.band[mine].map(widths)
        else:
            q = conformal_quantile(errors.error[~mine], level)
        inside[mine] = errors.error[mine] <= q
    return inside


def nested_halfwidths(points: pd.DataFrame, fit=None) -> dict:
    """{figure: {level: {size band: half-width}}}: the band sized from the other figures' points alone,
    each predicted by a refit without both; a figure whose others are too few is left out."""
    out = {}
    for figure in sorted(points.experiment.unique(), key=str):
        rest = points[points.experiment != figure]
        if rest.experiment.nunique() < 2:
            continue
        try:
            predicted = cross_validate(rest, "experiment", fit).model_post_seconds
        except tm.TooFewPoints:
            continue
        errors = held_out_errors(rest, predicted)
        if len(errors):
            out[str(figure)] = {level: conditional_halfwidths(errors, level) for level in LEVELS}
    return out


SCHEMES = {"leave one experiment out": "experiment", "leave one size out": "m"}
LARGE = 2048  # the second benchmark: sizes from 2048 up


def folds(points: pd.DataFrame, column: str):
    """(held-out value, train index, test index) per fold; train never holds a test configuration."""
    configs = pd.Series([str(c) for c in points[tm.CONFIG].itertuples(index=False)], index=points.index)
    for value in sorted(points[column].unique(), key=str):
        test = points.index[points[column] == value]
        train = points.index[~configs.isin(set(configs[test]))]
        yield value, train, test


def fold_fits(points: pd.DataFrame, column: str, fit=None) -> dict:
    """{held-out value: (fit without it, the test index)}; TooFewPoints names a fold too small."""
    fit = fit or tm.fit_published
    out = {}
    for value, train, test in folds(points, column):
        if set(train) & set(test):
            raise AssertionError(f"fold {column}={value}: a point is in its own fit")
        try:
            out[value] = (fit(points.loc[train]), test)
        except tm.TooFewPoints as e:
            raise tm.TooFewPoints(f"fold {column}={value}: {e}") from None
    return out


def cross_validate(points: pd.DataFrame, column: str, fit=None) -> pd.DataFrame:
    """Points with model_post_seconds predicted by fits without them; `fold` names the held-out group."""
    parts = [tm.predict(points.loc[test], result.constants).assign(fold=str(value))
             for value, (result, test) in fold_fits(points, column, fit).items()]
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
    bands = size_band(points.m, points.k, points.n)
    for band in SIZE_BANDS:
        yield "size band", band, points.index[bands == band]
    for experiment in sorted(points.experiment.unique()):
        yield "experiment", experiment, points.index[points.experiment == experiment]
    for size in sorted(points.m.unique()):
        yield "size", str(size), points.index[points.m == size]


def fidelity_table(df: pd.DataFrame, model, target: str = POST_CHIP) -> pd.DataFrame:
    """The model (in sample and both cross-validations, from `model`, a FittedModel) and the raw
    compiler against the post; each row states n and the rows left out, by reason."""
    points, left_out = tm.reference_points(df, source="published", target=target)
    if len(points) == 0:
        return pd.DataFrame()
    if model.published is None:
        raise tm.TooFewPoints(model.unfitted or "no fit of the published points")
    left = "; ".join(f"{reason}: {n}" for reason, n in left_out.items())
    predictions = {
        ("compiler", "none (libtpu's estimate)"): points.seconds,
        ("model", "in-sample (fitted on every point)"):
            tm.predict(points, model.published.constants).model_post_seconds,
    }
    notes = {}
    for name, column in SCHEMES.items():
        predicted = model.held_out(points, column)
        if predicted is None:  # a small run: this validation cannot be made; the table says why
            predictions[("model", name)] = pd.Series(np.nan, index=points.index)
            notes[("model", name)] = f"not validated: {model.not_validated.get(name, 'no refits')}"
        else:
            predictions[("model", name)] = predicted.model_post_seconds
    nested = model.band.nested if model.band is not None and model.band.nested else None
    bands = interval_checks(points, predictions[("model", "leave one experiment out")], nested)
    rows = []
    for (estimator, validation), predicted in predictions.items():
        for scope, group, index in groups(points):
            checked = bands if validation == "leave one experiment out" else None
            rows.append(dict(target=target, compared_with="published", estimator=estimator,
                             validation=validation, scope=scope, group=group,
                             **scores(points.loc[index], predicted.loc[index]),
                             **interval_scores(checked, index, group if scope == "size band" else None),
                             note=notes.get((estimator, validation), ""),
                             n_left_out=sum(v for r, v in left_out.items() if not r.startswith("scored")),
                             left_out=left))
    return pd.DataFrame(rows)


def held_out_errors(points: pd.DataFrame, predicted: pd.Series) -> pd.DataFrame:
    """|ln(predicted / published)| per point, with its fold (figure) and size band."""
    error = np.abs(np.log(predicted / points.ref_seconds))
    return pd.DataFrame({"error": error, "fold": points.experiment.astype(str),
                         "band": size_band(points.m, points.k, points.n)}).dropna()


def interval_checks(points: pd.DataFrame, predicted: pd.Series, nested: dict | None = None,
                    fit=None) -> pd.DataFrame | None:
    """Per held-out point: inside each level's band sized without its figure (nested), its size band,
    and the table's bands (all errors, per size band) in attrs."""
    errors = held_out_errors(points, predicted)
    if errors.empty:
        return None
    if nested is None:
        nested = nested_halfwidths(points, fit)
    out = pd.DataFrame({"band": errors.band}, index=errors.index)
    out.attrs["nested"] = nested
    for level in LEVELS:
        s = suffix(level)
        out[f"coverage{s}"] = coverage(errors, level, nested)
        out.attrs[f"halfwidth{s}"] = conditional_halfwidths(errors, level)
    return out


def interval_scores(checked: pd.DataFrame | None, index, band: str | None = None) -> dict:
    """A group's share of points inside the band (coverage<L>) and the band's half-width (halfwidth<L>):
    a size band's row its band's, else the widest of its points' bands; NaN where nothing was checked."""
    out = {}
    for level in LEVELS:
        s = suffix(level)
        mine = checked.index.intersection(index) if checked is not None else []
        widths = checked.attrs[f"halfwidth{s}"] if checked is not None else {}
        bands = {band} if band in widths else set(checked.loc[mine, "band"]) if len(mine) else set()
        out[f"halfwidth{s}"] = max((widths[b] for b in bands), default=np.nan)
        out[f"coverage{s}"] = float(checked.loc[mine, f"coverage{s}"].mean()) if len(mine) else np.nan
    return out


def headline(table: pd.DataFrame) -> dict:
    """Per estimator and validation, against the post's numbers: overall and from 2048 up, Spearman, and
    the worst experiment's median."""
    if "compared_with" in table:
        table = table[table.compared_with.fillna("published") == "published"]
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


BOUND = 0.5  # per-step costs (or copies) at least this share of the modelled time decide it


def band_misses(points: pd.DataFrame, dtype: str = "float32", size: int = LARGE) -> pd.DataFrame:
    """The post's `dtype` points from `size` up, predicted without their figure: inside the 80 % band or
    not, and why not (band_miss_reason)."""
    fits = fold_fits(points, "experiment")

    def held_out(**changes):  # each point by the refit without its figure, constants changed as given
        return pd.concat([tm.predict(points.loc[test], dataclasses.replace(r.constants, **changes))
                          for r, test in fits.values()])

    predicted = held_out()
    stepless = held_out(dma_cycles=0.0, step_cycles=0.0, overlapped_step_cycles=0.0)
    copyless = held_out(bandwidth_fraction=1e9)  # copies free
    checked = interval_checks(points, predicted.model_post_seconds.reindex(points.index))
    mine = points.index[(points.dtype == dtype) & (points.m >= size)]
    p, pred = points.loc[mine], predicted.loc[mine]
    out = pd.DataFrame({
        "experiment": p.experiment, "kernel": p.kernel, "size": p.m.astype(int),
        "blocks": [_blocks(r) for r in p.itertuples()],
        "post_tflops": p.ref_tflops, "model_tflops": p.ref_tflops * p.ref_seconds / pred.model_post_seconds,
        "ln_error": np.log(pred.model_post_seconds / p.ref_seconds),
        # the band each point was checked against: sized without its figure
        "halfwidth80": [checked.attrs["nested"].get(str(e), {}).get(0.8, checked.attrs["halfwidth80"])[b]
                        for e, b in zip(p.experiment, checked.loc[mine, "band"], strict=True)],
        "inside80": checked.loc[mine, "coverage80"].astype(bool),
        "step_share": 1 - stepless.loc[mine].model_post_seconds / pred.model_post_seconds,
        "copy_share": 1 - copyless.loc[mine].model_post_seconds / pred.model_post_seconds,
        "nonmonotonic": p.nonmonotonic.astype(bool)})
    out["reason"] = [band_miss_reason(r) if not r.inside80 else "" for r in out.itertuples()]
    return out.sort_values(["inside80", "experiment", "size"]).reset_index(drop=True)


def _blocks(r) -> str:
    return "–" if pd.isna(r.bm) else blocks_text(r.bm, r.bk, r.bn)


def band_miss_reason(r) -> str:
    """Why a point lies outside its band, from its own numbers."""
    off = f"{abs(np.expm1(r.ln_error)):.0%}"  # the post against the model
    if r.nonmonotonic:
        return (f"XLA's cost-model rate dips at this size (flagged, never fitted); the model takes the best "
                f"smaller size's rate instead, and the post's number lies {off} "
                f"{'above' if r.ln_error > 0 else 'below'} it")
    if r.ln_error > 0 and r.copy_share >= BOUND:
        return (f"copies at the chip's full HBM bandwidth are {r.copy_share:.0%} of the modelled time, yet "
                f"the post is {off} faster: the kernel moves fewer bytes per step than the model counts, or "
                "overlaps more")
    if r.step_share >= BOUND:
        return (f"per-step costs are {r.step_share:.0%} of the modelled time: the step costs fitted across "
                f"all block sizes {'overstate' if r.ln_error > 0 else 'understate'} these blocks' steps")
    return (f"the post is {off} {'faster' if r.ln_error > 0 else 'slower'} than the model, whose time here "
            f"is {r.copy_share:.0%} copies at full HBM bandwidth and {r.step_share:.0%} per-step costs")


def band_misses_markdown(misses: pd.DataFrame) -> str:
    """The docs' summary: how many points lie inside, and a line per point outside with its reason."""
    out = misses[~misses.inside80]
    lines = [f"{int(misses.inside80.sum())} of the post's {len(misses)} float32 points from {LARGE} lie "
             "inside their 80 % band out of sample; outside:", "",
             "| figure | kernel | size | blocks | the post | model | ln error | band ± | why |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {r.experiment} | {r.kernel} | {r.size} | {r.blocks} | {r.post_tflops:.1f} | "
              f"{r.model_tflops:.1f} | {r.ln_error:+.3f} | {r.halfwidth80:.3f} | {r.reason} |"
              for r in out.itertuples()]
    return "\n".join(lines)


if __name__ == "__main__":  # python -m tpu_matmul_repro.analysis.validation results/matmul.parquet [OUT.csv]
    import sys

    from tpu_matmul_repro.analysis.runs import read_results
    from tpu_matmul_repro.analysis.toolchain_rows import primary_rows

    rows = primary_rows(read_results(sys.argv[1]), "current")
    misses = band_misses(tm.reference_points(rows, source="published")[0])
    if len(sys.argv) > 2:
        from tpu_matmul_repro.experiments.core.atomic_write import write_csv_atomic

        write_csv_atomic(misses, sys.argv[2])
    print(band_misses_markdown(misses))
