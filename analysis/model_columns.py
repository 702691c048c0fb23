"""The table's modelled columns and the fits behind them (the model: analysis/timing_model.py).

The default run fits the post's published v5e numbers; a TPU run is re-fitted from its own
measurements. Every estimate row gets both modelled times and names its fit; measured rows get the
modelled times of their configuration and their ratios to them.
"""
import numpy as np
import pandas as pd

from tpu_matmul_repro.analysis import intervals, validation
from tpu_matmul_repro.analysis.runs import latest_labels
from tpu_matmul_repro.analysis.timing_model import (
    CONFIG,
    COST_MODEL,
    LOWER,
    MONOTONE_ENVELOPE,
    PARAMS,
    UNITS,
    UPPER,
    Fit,
    TooFewPoints,
    device_seconds,
    envelope_cycles,
    features,
    fit_measured,
    fit_published,
    flag_nonmonotonic,
    post_vmem_bytes,
    reference_points,
)
from tpu_matmul_repro.experiments.core.chips import CHIPS, POST_CHIP
from tpu_matmul_repro.experiments.core.units import flops as flop_count
from tpu_matmul_repro.experiments.core.units import tflops
from tpu_matmul_repro.kernels import is_pallas


def published_fit(df: pd.DataFrame) -> tuple["Fit | None", pd.DataFrame]:
    """The fit on every published point of the post's chip (None for a small config: no modelled
    columns, fidelity.csv says why), and those points."""
    points, _ = reference_points(df, source="published", target=POST_CHIP)
    if not len(points):
        return None, points
    try:
        return fit_published(points), points
    except TooFewPoints:
        return None, points


def fits(df: pd.DataFrame) -> dict[str, tuple[Fit, str]]:
    """Every fit the table allows: {name: (fit, what it was fitted on)}.

    "published v5e": the post's numbers, fitted on every point; "published v5e without <figure>": refitted
    without one of the post's figures (leave one experiment out: the out-of-sample model of that
    figure's rows, and the refits whose spread widens the other rows' bands). "measured <target> <run>": a TPU
    run's own measurements: each target's latest run (the one its figures draw), if it has enough
    points. Older runs are not fitted: a file of hundreds of runs would cost a fit each, and only the
    latest one models the table.
    """
    out = {}
    fit, points = published_fit(df)
    if fit is not None:
        out[PUBLISHED] = (fit, "published")
    if PUBLISHED in out:  # the refits without each figure: its rows' out-of-sample model
        try:
            for experiment, (fit, _) in validation.fold_fits(points, "experiment").items():
                out[without(experiment)] = (fit, "published")
        except TooFewPoints:  # a fold too small to fit: every row keeps the fit on every point
            pass
    latest = latest_labels(df[df.source == "measured"]).sort_values(["target", "run_label"])
    for target, label in latest.itertuples(index=False):
        if target not in CHIPS:
            continue
        points, _ = reference_points(df, source="measured", target=target, run_label=label)
        try:
            out[f"measured {target} {label}"] = (fit_measured(points), "measured")
        except TooFewPoints:
            continue
    return out


def constants_table(all_fits: dict) -> pd.DataFrame:
    """One row per fit and constant: value, standard error, unit, range, points, at a bound."""
    rows = []
    for name, (fit, source) in all_fits.items():
        for p, lo, hi in zip(PARAMS, LOWER, UPPER, strict=True):
            rows.append(dict(fit=name, fitted_on=source, constant=p, value=getattr(fit.constants, p),
                             std_error=getattr(fit.std_errors, p), unit=UNITS[p], lower=lo, upper=hi,
                             at_bound=p in fit.at_bound, n_points=fit.n_points,
                             rms_log_error=fit.rms_log_error))
    return pd.DataFrame(rows)


PUBLISHED = f"published {POST_CHIP}"
WITHOUT = " without "


def without(experiment: str) -> str:
    """The name of the fit that left one of the post's figures out."""
    return f"{PUBLISHED}{WITHOUT}{experiment}"


def is_refit(name: str) -> bool:
    return name.startswith(PUBLISHED + WITHOUT)


def choose_fit(all_fits: dict, target: str):
    """A target's measured fit (its latest run's) if it has one, else the published v5e fit (for another
    generation: its own clock, peak and bandwidth with v5e's constants, an extrapolation)."""
    measured = [n for n in all_fits if n.startswith(f"measured {target} ")]
    if measured:
        return measured[-1]
    return PUBLISHED if PUBLISHED in all_fits else None


def apply(df: pd.DataFrame, toolchain: str | None = None,
          served: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The table with its modelled columns, and the constants table.

    With `toolchain`, only that toolchain's estimates (and those of the compilers `served` names for
    some targets, and the published and measured rows) are fitted and modelled; other toolchains' rows
    (the post's compiler: no Pallas cycles) keep empty columns.

    Estimate rows get model_device_seconds / _tflops and model_post_seconds / _tflops from the fit
    named in model_fit; measured rows get the modelled times of their configuration's estimate and
    measured_over_model (device time) and wall_over_model (blocked-call time). XLA estimates whose
    TFLOP/s falls with size are flagged (estimate_nonmonotonic), and their modelled columns use the
    best smaller problem's rate (xla_estimate_method monotone_envelope), never the dip. Every modelled
    column has its prediction intervals beside it (analysis/intervals.py).
    """
    df = df.assign(post_vmem_bytes=post_vmem_bytes(df)) if len(df) else df
    if toolchain is not None:
        from tpu_matmul_repro.analysis.toolchains import primary_rows

        mine = primary_rows(df, toolchain, served)
        with_model, constants = apply(mine)
        rest = df.drop(index=mine.index).assign(estimate_nonmonotonic=False, model_fit="",
                                                xla_estimate_method="", model_interval="")
        return pd.concat([with_model, rest]).loc[df.index].reindex(columns=with_model.columns), constants
    has_cycles = "est_cycles" in df and df.est_cycles.notna().any()
    all_fits = fits(df) if has_cycles else {}
    band = intervals.band(df) if PUBLISHED in all_fits else None
    return modelled(df, all_fits, band), constants_table(all_fits)


def modelled(df: pd.DataFrame, all_fits: dict, band: intervals.Band | None) -> pd.DataFrame:
    """The modelled columns of `df` from fits already made ({name: (fit, what it was fitted on)}: the
    published fit and its refits without each figure) and the published fit's band: what turns a
    compile into a modelled number, for the compile study's table (apply) and the advisor's alike
    (advise/search.py), so one configuration gets one number."""
    out = df.copy()
    out["estimate_nonmonotonic"] = flag_nonmonotonic(out) if len(out) else False
    xla = ((out.source == "estimate") & ~is_pallas(out.kernel) & (out.status == "ok")
           & out.est_cycles.notna()) if "est_cycles" in out else pd.Series(False, index=out.index)
    out["xla_estimate_method"] = np.where(xla, COST_MODEL, "")
    out.loc[out.estimate_nonmonotonic.eq(True), "xla_estimate_method"] = MONOTONE_ENVELOPE
    for col in ("model_device_seconds", "model_post_seconds", "model_device_tflops", "model_post_tflops",
                "measured_over_model", "wall_over_model"):
        out[col] = np.nan
    out["model_fit"] = ""
    if "est_cycles" not in out or out.est_cycles.isna().all():
        intervals.add_columns(out, None)
        return out
    ok = (out.source == "estimate") & (out.status == "ok") & out.target.isin(list(CHIPS))
    spread, calibrated = pd.Series(0.0, index=out.index), pd.Series(False, index=out.index)
    # XLA's rows need its cost model's cycles; a Pallas row needs only its compile (the model's inputs)
    _model(out, ok & (out.est_cycles.notna() | is_pallas(out.kernel)), all_fits, spread, calibrated)
    work = flop_count(out.m.astype(float), out.k.astype(float), out.n.astype(float))
    out["model_device_tflops"] = tflops(work, out.model_device_seconds)
    out["model_post_tflops"] = tflops(work, out.model_post_seconds)
    _measured_ratios(out, spread, calibrated)
    intervals.add_columns(out, band, spread, calibrated)
    return out


def out_of_sample(rows: pd.DataFrame, all_fits: dict, published_dtypes: set) -> pd.Series:
    """Per v5e row: the name of the refit that left its figure out, where there is one and the post
    published its dtype ("" elsewhere): the row is modelled out of sample, like the post's point."""
    names = rows.experiment.map(lambda e: without(e) if without(e) in all_fits else "")
    return names.where((rows.target == POST_CHIP) & rows.dtype.isin(published_dtypes), "")


def _model(out: pd.DataFrame, rows: pd.Series, all_fits: dict, spread: pd.Series,
           calibrated: pd.Series) -> None:
    """The modelled times of the `rows` of each target from its chosen fit.

    v5e rows of the post's figures take the refit without their figure (out_of_sample); the others
    the chosen fit. `spread` gets, per row, the largest |ln| by which a leave-one-experiment-out refit
    moves its device time; `calibrated` marks the rows whose band was checked as it is used (their
    figure's refit, a published kind, compiler cycles, not the block search)."""
    envelope = envelope_cycles(out)
    refits = {name: fit for name, (fit, _) in all_fits.items() if is_refit(name)}
    published = set(out[out.source == "published"].dtype)
    for target in sorted(set(out[rows].target)):
        name = choose_fit(all_fits, target)
        if name is None:
            continue
        mine = out[rows & (out.target == target)]
        # a flagged XLA dip: the envelope's cycles; else the row's own
        cycles = envelope.reindex(mine.index).tolist()
        feats = [features(r, cycles=None if pd.isna(c) else c) for r, c in zip(mine.itertuples(), cycles,
                                                                               strict=True)]
        names = out_of_sample(mine, all_fits, published) if name == PUBLISHED else pd.Series("", mine.index)
        names = names.where(names != "", name)
        device = np.array([device_seconds(f, all_fits[n][0].constants) for f, n in zip(feats, names,
                                                                                     strict=True)])
        call = np.array([all_fits[n][0].constants.call_seconds for n in names])
        out.loc[mine.index, "model_device_seconds"] = device
        out.loc[mine.index, "model_post_seconds"] = device + call
        out.loc[mine.index, "model_fit"] = list(names)
        if name == PUBLISHED and refits:
            moved = np.array([[abs(np.log(device_seconds(f, fit.constants) / d)) for fit in refits.values()]
                              for f, d in zip(feats, device, strict=True)])
            spread[mine.index] = moved.max(axis=1)
        search = mine.search.eq(True) if "search" in mine else False
        calibrated[mine.index] = names.map(is_refit) & ~search


def _measured_ratios(out: pd.DataFrame, spread: pd.Series, calibrated: pd.Series) -> None:
    """Measured rows: the modelled times of the same target and configuration (of their experiment
    where it has them: its out-of-sample refit), and the ratios."""
    measured = out.source == "measured"
    if not measured.any():
        return
    on = ["target"] + CONFIG + ["vmem_limit_bytes"]
    est = out[(out.source == "estimate") & out.model_device_seconds.notna()]
    est = est.assign(_spread=spread[est.index], _calibrated=calibrated[est.index])
    cols = ["model_device_seconds", "model_post_seconds", "model_fit", "_spread", "_calibrated"]
    mine = out.loc[measured, on + ["experiment"]]
    same = mine.merge(est[on + ["experiment"] + cols].drop_duplicates(on + ["experiment"]),
                      on=on + ["experiment"], how="left")
    anywhere = mine.merge(est[on + cols].drop_duplicates(on), on=on, how="left")
    joined = same.fillna(anywhere) if len(same) else anywhere
    for col in ("model_device_seconds", "model_post_seconds"):
        out.loc[measured, col] = joined[col].to_numpy()
    out.loc[measured, "model_fit"] = joined.model_fit.fillna("").to_numpy()
    spread[measured] = joined._spread.fillna(0.0).to_numpy()
    calibrated[measured] = joined._calibrated.fillna(False).astype(bool).to_numpy()
    out.loc[measured, "measured_over_model"] = (out.seconds / out.model_device_seconds)[measured]
    out.loc[measured, "wall_over_model"] = (out.wall_seconds / out.model_post_seconds)[measured]
    work = flop_count(out.m.astype(float), out.k.astype(float), out.n.astype(float))
    out.loc[measured, "model_device_tflops"] = tflops(work, out.model_device_seconds)[measured]
    out.loc[measured, "model_post_tflops"] = tflops(work, out.model_post_seconds)[measured]
