"""Prediction intervals of the timing model from its out-of-sample errors (split conformal,
conditioned on size; off v5e widened by the refits' spread and floored by public errors), as
columns of the table. The method: docs/timing-model.md."""
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

# The widest half-width in ln a band read back may have: a factor of ten either way. The model's bands
# are a few tenths; a wider one is no band a fit of the post's points gives, and would say nothing.
MAX_HALFWIDTH = math.log(10)
VALIDATION = "leave one experiment out"  # the cross-validation whose errors size the bands (fidelity.csv)


@dataclasses.dataclass(frozen=True)
class Band:
    """Half-widths in ln per level (`halfwidth`: the widest size band's, for a row of unknown size;
    `by_size`: size band -> level -> q) and the number of held-out errors behind them."""

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
    """target -> (n, {level: q}) off v5e: q the split-conformal quantile of the generation's modelled
    public rows' |ln| errors (infinite where n is too small: no floor at that level)."""
    rows = scores[scores.log_ratio.notna() & (scores.generation != POST_CHIP)]
    return {target: (len(part), {level: conformal_quantile(part.log_ratio.abs(), level) for level in LEVELS})
            for target, part in rows.groupby("generation")}


def band_of(errors: pd.DataFrame, nested: dict | None = None) -> Band:
    """The band sized by held-out errors (validation.held_out_errors), per size band and the widest;
    `nested` (validation.nested_halfwidths) is kept for the coverage check."""
    by_size = {}
    for level in LEVELS:
        for name, q in validation.conditional_halfwidths(errors, level).items():
            by_size.setdefault(name, {})[level] = q
    widest = {level: max(widths[level] for widths in by_size.values()) for level in LEVELS}
    return Band(widest, len(errors), by_size, nested=dict(nested or {}))


def add_columns(out: pd.DataFrame, b: Band | None, spread: pd.Series | None = None,
                calibrated: pd.Series | None = None) -> None:
    """The interval columns of every row with modelled times, and model_interval saying how they were
    made. Rows not `calibrated` (not modelled by the fit that left their figure out) add `spread` (ln)."""
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
