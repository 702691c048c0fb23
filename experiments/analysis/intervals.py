"""Prediction intervals of the timing model, from its out-of-sample errors (split conformal).

The errors: |ln(modelled / published)| of every published v5e point, each predicted by the fit that
left its figure out (leave one experiment out, validation.cross_validate): errors of points no fit
had seen. The half-width of the level-L band is their split-conformal quantile, the
ceil((n + 1) L)-th smallest (infinite when n is too small for L), and a modelled time t gets the band
[t exp(-q), t exp(q)], cut at the chip's peak (no time below FLOPs / peak). Under exchangeability a
new point of the same kind falls inside it with probability at least L.

Only the post-method time (one blocked call) has reference numbers; device time gets the same
half-width in ln (the model's two times differ by the constant call_seconds). Off v5e the band is
v5e's, never narrower, and the row says that no measurement on that generation checks it.

coverage() checks the bands on held-out points only: each figure's points against the quantile of
the other figures' errors, so no point is inside a band it helped to size (results/fidelity.csv).
"""
import dataclasses
import math

import numpy as np
import pandas as pd

from tpu_matmul_repro.experiments.analysis import timing_model as tm
from tpu_matmul_repro.experiments.analysis import validation
from tpu_matmul_repro.experiments.analysis.summaries import model_only
from tpu_matmul_repro.experiments.analysis.validation import LEVELS, conformal_quantile, coverage, suffix  # noqa: F401
from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.experiments.core.schema import INTERVAL_COLUMNS
from tpu_matmul_repro.experiments.core.units import TERA, flops

HELD_OUT = "experiment"  # the cross-validation whose errors size the bands ...
VALIDATION = "leave one experiment out"  # ... as fidelity.csv names it


def held_out_errors(points: pd.DataFrame) -> pd.DataFrame:
    """|ln(modelled / published)| of each point from a fit without its figure, with its fold."""
    predicted = validation.cross_validate(points, HELD_OUT)
    error = np.abs(np.log(predicted.model_post_seconds / points.ref_seconds.loc[predicted.index]))
    return pd.DataFrame({"error": error, "fold": predicted.fold})


@dataclasses.dataclass(frozen=True)
class Band:
    """Half-widths in ln per level, and the number of held-out errors behind them."""

    halfwidth: dict  # level -> q
    n: int

    def describe(self, target: str, fit: str, model_only: bool = False) -> str:
        widths = ", ".join(f"{suffix(level)} %: x/{math.exp(q):.2f}" for level, q in self.halfwidth.items())
        text = (f"split conformal ({widths}) from {self.n} published v5e points, each predicted "
                f"leaving its figure out")
        if fit.startswith("measured"):
            text += f"; the fit of these times ({fit}) is not cross-validated: the published fit's band"
        elif target != POST_CHIP:
            text += f"; v5e's band: no measurement on {target} checks it"
        if model_only:
            text += "; a model-only estimate (no compiler cycles): the band of estimates with cycles, " \
                    "not checked for it"
        return text


def band(df: pd.DataFrame) -> Band | None:
    """The band of the published v5e fit, or None where the table cannot cross-validate it."""
    points, _ = tm.reference_points(df, source="published", target=POST_CHIP)
    if len(points) == 0:
        return None
    try:
        errors = held_out_errors(points)
    except tm.TooFewPoints:
        return None
    return Band({level: conformal_quantile(errors.error, level) for level in LEVELS}, len(errors))


def add_columns(out: pd.DataFrame, b: Band | None) -> None:
    """The interval columns of every row with modelled times, and model_interval saying how they were
    made; empty where there is no band or no modelled time."""
    for col in INTERVAL_COLUMNS:
        out[col] = np.nan
    out["model_interval"] = ""
    if b is None:
        return
    has = out.model_device_seconds.notna()
    # no chip computes faster than its peak: the band stops there (peak_tflops travels with each row)
    peak = (out.peak_tflops if "peak_tflops" in out else pd.Series(np.inf, index=out.index)).fillna(np.inf)
    fastest = flops(out.m.astype(float), out.k.astype(float), out.n.astype(float)) / (peak * TERA)
    for level, q in b.halfwidth.items():
        s = suffix(level)
        for time in ("device", "post"):
            seconds = out[f"model_{time}_seconds"]
            tflops = out[f"model_{time}_tflops"]
            out[f"model_{time}_seconds_lo{s}"] = np.fmax(seconds * math.exp(-q), fastest).where(has)
            out[f"model_{time}_seconds_hi{s}"] = seconds * math.exp(q)
            out[f"model_{time}_tflops_lo{s}"] = tflops * math.exp(-q)
            out[f"model_{time}_tflops_hi{s}"] = np.fmin(tflops * math.exp(q), peak).where(has)
    fit = out.model_fit.fillna("").str.split(",").str[0]
    only = model_only(out)
    for (target, name, bare), rows in out[has].groupby([out.target[has], fit[has], only[has]]):
        out.loc[rows.index, "model_interval"] = b.describe(target, name, model_only=bool(bare))
