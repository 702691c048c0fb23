"""The table's modelled columns from the run's fits: both modelled times, the fit's name and the
bands for estimates; for measured rows their configuration's modelled times and the ratios."""
import numpy as np
import pandas as pd

from tpu_matmul_repro.analysis import intervals
from tpu_matmul_repro.analysis.fitted_model import PUBLISHED, FittedModel, fit_model, is_refit, without
from tpu_matmul_repro.analysis.timing_model import (
    CONFIG,
    COST_MODEL,
    MONOTONE_ENVELOPE,
    device_seconds,
    envelope_cycles,
    features,
    flag_nonmonotonic,
    post_vmem_bytes,
)
from tpu_matmul_repro.experiments.core.chips import CHIPS, POST_CHIP
from tpu_matmul_repro.experiments.core.units import flops as flop_count
from tpu_matmul_repro.experiments.core.units import tflops
from tpu_matmul_repro.kernels import is_pallas


def choose_fit(all_fits: dict, target: str):
    """A target's latest measured fit, else the published v5e fit (off v5e: an extrapolation)."""
    measured = [n for n in all_fits if n.startswith(f"measured {target} ")]
    if measured:
        return measured[-1]
    return PUBLISHED if PUBLISHED in all_fits else None


def apply(df: pd.DataFrame, toolchain: str | None = None,
          served: dict | None = None) -> tuple[pd.DataFrame, FittedModel]:
    """The table with its modelled columns (docs/outputs.md), and the run's fits (fit_model). With
    `toolchain`, only its rows (and `served`'s, published and measured) are modelled; others stay empty."""
    df = df.assign(post_vmem_bytes=post_vmem_bytes(df)) if len(df) else df
    if toolchain is not None:
        from tpu_matmul_repro.analysis.toolchain_rows import primary_rows

        mine = primary_rows(df, toolchain, served)
        with_model, model = apply(mine)
        rest = df.drop(index=mine.index).assign(estimate_nonmonotonic=False, model_fit="",
                                                xla_estimate_method="", model_interval="")
        return pd.concat([with_model, rest]).loc[df.index].reindex(columns=with_model.columns), model
    if "est_cycles" not in df:
        return modelled(df, {}, None), FittedModel({})
    model = fit_model(df)
    if df.est_cycles.isna().all():  # no compiler cycles: no modelled columns (fidelity.csv has the fit)
        return modelled(df, {}, None), model
    return modelled(df, model.fits, model.band if PUBLISHED in model.fits else None), model


def modelled(df: pd.DataFrame, all_fits: dict, band: intervals.Band | None) -> pd.DataFrame:
    """The modelled columns of `df` from fits already made ({name: (fit, fitted on)}) and the band: one
    path for the compile study's table and the advisor's, so one configuration gets one number."""
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
    """Per v5e row of a published dtype: the refit that left its figure out ("" elsewhere)."""
    names = rows.experiment.map(lambda e: without(e) if without(e) in all_fits else "")
    return names.where((rows.target == POST_CHIP) & rows.dtype.isin(published_dtypes), "")


def _model(out: pd.DataFrame, rows: pd.Series, all_fits: dict, spread: pd.Series,
           calibrated: pd.Series) -> None:
    """The modelled times of the `rows` of each target from its chosen fit (out_of_sample's refit where
    it has one). `spread`: the largest |ln| a refit moves a row's device time; `calibrated`: rows whose
    band was checked as it is used."""
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
    """Measured rows: the modelled times of their configuration (their experiment's first), and ratios."""
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
