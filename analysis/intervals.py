"""Prediction intervals of the timing model, from its out-of-sample errors (split conformal, by size).

The errors: |ln(modelled / published)| of every published v5e point, each predicted by the fit that
left its figure out (leave one experiment out, validation.cross_validate): errors of points no fit
had seen. They grow with the problem's size, so the bands are conditioned on it
(validation.conditional_halfwidths): each size band's errors are scaled by their root mean square,
the half-width of the level-L band is the split-conformal quantile of the scaled errors (the
ceil((n + 1) L)-th smallest, infinite when n is too small for L) times the row's size band's scale,
and a modelled time t gets [t exp(-q), t exp(q)], cut at the chip's peak (no time below FLOPs /
peak). Under exchangeability within a size band a new point of that kind falls inside with
probability about L; validation.coverage checks it on held-out points only (results/fidelity.csv).

Where the band is calibrated: v5e rows of one of the post's figures (and a dtype it published) are
modelled by the fit that left that figure out (model_columns), the very predictions the errors come
from. Every other row (other generations, int8, the block search's configurations on v5e outside a
figure) is modelled by the fit on every point; its band is v5e's for its size, never narrower, plus
how far its prediction moves between the leave-one-experiment-out refits (`spread`, the largest
|ln(refit / full fit)|), and its row says that no measurement checks it.

Off v5e, where public measurements of that generation were scored (results/public_scores.csv, never
fitted on), a row's half-width is at least their split-conformal quantile (`public_halfwidths`: the
ceil((n + 1) L)-th smallest |ln(modelled / measured)| of the generation's modelled public rows), and its
row says so: the band is then as wide as the model's errors there, not only v5e's.

Only the post-method time (one blocked call) has reference numbers; device time gets the same
half-width in ln (the model's two times differ by the constant call_seconds).
"""
import dataclasses
import math

import numpy as np
import pandas as pd

from tpu_matmul_repro.analysis import validation
from tpu_matmul_repro.analysis.validation import (  # noqa: F401  (re-exported)
    LEVELS,
    SIZE_BANDS,
    conformal_quantile,
    coverage,
    size_band,
    suffix,
)
from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.experiments.core.schema import INTERVAL_COLUMNS
from tpu_matmul_repro.experiments.core.units import TERA, flops

# The widest half-width in ln a run's band may have when it is read back (timing_model.json, the
# advisor's cache): a factor of ten either way. The timing model's bands are a few tenths
# (results/fidelity.csv); one wider than this is not a band a fit of the post's points gives, and would
# print intervals such as [4.9, 2.7e22] ms that say nothing.
MAX_HALFWIDTH = math.log(10)
VALIDATION = "leave one experiment out"  # the cross-validation whose errors size the bands (fidelity.csv)


@dataclasses.dataclass(frozen=True)
class Band:
    """Half-widths in ln per level, and the number of held-out errors behind them.

    `halfwidth` (level -> q) is the widest size band's, the band for a row of unknown size;
    `by_size` (size band -> level -> q) the conditional ones (empty: one band for every size).
    """

    halfwidth: dict  # level -> q
    n: int
    by_size: dict = dataclasses.field(default_factory=dict)
    # target -> (n, {level: q}): the split-conformal half-widths of a generation's public errors, a
    # floor for its rows off v5e (public_halfwidths); empty: none scored
    public: dict = dataclasses.field(default_factory=dict)
    # figure -> {level: {size band: q}}: the band sized without that figure (validation.nested_halfwidths),
    # which fidelity.csv's coverage checks it against; empty: not sized
    nested: dict = dataclasses.field(default_factory=dict)

    def for_size(self, m, k, n) -> dict:
        """level -> half-width for a problem of m x k x n."""
        return self.by_size.get(size_band(m, k, n), self.halfwidth) if self.by_size else self.halfwidth

    def describe(self, target: str, fit: str, size: str | None = None, calibrated: bool = True) -> str:
        widths = self.by_size.get(size, self.halfwidth) if size else self.halfwidth
        text = ", ".join(f"{suffix(level)} %: x/{math.exp(q):.2f}" for level, q in widths.items())
        where = f" for sizes {size}" if size and self.by_size else ""
        text = (f"split conformal by size ({text}{where}) from {self.n} published v5e points, each "
                f"predicted leaving its figure out")
        if fit.startswith("measured"):
            text += f"; the fit of these times ({fit}) is not cross-validated: the published fit's band"
        elif target != POST_CHIP and target in self.public:
            n, floor = self.public[target]
            widths = ", ".join(f"{suffix(level)} %: x/{math.exp(q):.2f}" for level, q in floor.items()
                               if math.isfinite(q))
            text += (f"; v5e's band widened by how far the leave-one-experiment-out refits move this "
                     f"prediction, and never narrower than the errors of {n} public measurements on "
                     f"{target} ({widths}; split conformal, never fitted on)")
        elif target != POST_CHIP:
            text += (f"; v5e's band widened by how far the leave-one-experiment-out refits move this "
                     f"prediction: no measurement on {target} checks it")
        elif not calibrated:
            text += ("; widened by how far the leave-one-experiment-out refits move this prediction: "
                     "no published number of this kind checks it")
        return text


def public_halfwidths(scores: pd.DataFrame) -> dict:
    """target -> (n, {level: q}) for each generation other than v5e with modelled public rows
    (public_scores.csv's generation, log_ratio): q the split-conformal quantile of their |ln| errors
    at each level, infinite where n is too small for it (then no floor at that level)."""
    rows = scores[scores.log_ratio.notna() & (scores.generation != POST_CHIP)]
    return {target: (len(part), {level: conformal_quantile(part.log_ratio.abs(), level) for level in LEVELS})
            for target, part in rows.groupby("generation")}


def band_of(errors: pd.DataFrame, nested: dict | None = None) -> Band:
    """The band sized by held-out errors (validation.held_out_errors: error, fold, band), per size band
    and, for a row of unknown size, the widest; `nested`: the bands sized without each figure
    (validation.nested_halfwidths), kept for the coverage check."""
    by_size = {}
    for level in LEVELS:
        for name, q in validation.conditional_halfwidths(errors, level).items():
            by_size.setdefault(name, {})[level] = q
    widest = {level: max(widths[level] for widths in by_size.values()) for level in LEVELS}
    return Band(widest, len(errors), by_size, nested=dict(nested or {}))


def add_columns(out: pd.DataFrame, b: Band | None, spread: pd.Series | None = None,
                calibrated: pd.Series | None = None) -> None:
    """The interval columns of every row with modelled times, and model_interval saying how they were
    made; empty where there is no band or no modelled time. `calibrated`: rows modelled by the fit
    that left their figure out (their band is the conditional band as it was checked); the others'
    half-width adds `spread` (ln), how far the leave-one-experiment-out refits move their prediction."""
    for col in INTERVAL_COLUMNS:
        out[col] = np.nan
    out["model_interval"] = ""
    if b is None:
        return
    has = out.model_device_seconds.notna()
    calibrated = (calibrated if calibrated is not None else pd.Series(True, index=out.index)).reindex(
        out.index).fillna(False).astype(bool)
    extra = (spread if spread is not None else pd.Series(0.0, index=out.index)).reindex(out.index).fillna(0.0)
    extra = extra.where(~calibrated, 0.0)
    # no chip computes faster than its peak: the band stops there (peak_tflops travels with each row)
    peak = (out.peak_tflops if "peak_tflops" in out else pd.Series(np.inf, index=out.index)).fillna(np.inf)
    fastest = flops(out.m.astype(float), out.k.astype(float), out.n.astype(float)) / (peak * TERA)
    sizes = size_band(out.m, out.k, out.n)
    for level in LEVELS:
        s = suffix(level)
        q = sizes.map(lambda name, lv=level: b.by_size.get(name, b.halfwidth)[lv] if b.by_size
                      else b.halfwidth[lv]).astype(float) + extra
        if b.public:  # off v5e, never narrower than that generation's public errors
            floor = out.target.map(lambda t, lv=level: b.public[t][1][lv] if t in b.public else 0.0)
            floor = floor.where(np.isfinite(floor.astype(float)) & ~calibrated, 0.0).astype(float)
            q = np.fmax(q, floor)
        for time in ("device", "post"):
            seconds = out[f"model_{time}_seconds"]
            tflops = out[f"model_{time}_tflops"]
            out[f"model_{time}_seconds_lo{s}"] = np.fmax(seconds * np.exp(-q), fastest).where(has)
            out[f"model_{time}_seconds_hi{s}"] = seconds * np.exp(q)
            out[f"model_{time}_tflops_lo{s}"] = tflops * np.exp(-q)
            out[f"model_{time}_tflops_hi{s}"] = np.fmin(tflops * np.exp(q), peak).where(has)
    fit = out.model_fit.fillna("").str.split(",").str[0]
    keys = [out.target[has], fit[has], sizes[has], calibrated[has]]
    for (target, name, size, known), rows in out[has].groupby(keys):
        out.loc[rows.index, "model_interval"] = b.describe(target, name, size=size, calibrated=bool(known))
