"""The report's short section on the public scores (results/public_scores.csv): the timing model
against TPU matmul timings others published, never fitted on them."""
import math
from pathlib import Path

import pandas as pd

from tpu_matmul_repro.experiments.core.chips import generation_order
from tpu_matmul_repro.experiments.core.i18n import N_
from tpu_matmul_repro.report.sections import Section, register

HERE_TEMPLATES = Path(__file__).resolve().parent / "templates"
SHAPE_CLASSES = {"square": N_("square"), "llm_projection": N_("LLM projection"), "unaligned": N_("unaligned")}


def percent(log_ratio: float) -> float:
    """A ln ratio as a signed percentage: ln(model / measured) -> (model / measured - 1) in %."""
    return 100 * (math.exp(log_ratio) - 1)


def summary(part: pd.DataFrame) -> dict:
    """n, median |error| in %, median signed error in % (below 0: the model is faster than measured) as
    signed text, and the 80 % coverage of modelled public rows."""
    ln = part.log_ratio.astype(float)
    return dict(n=len(part), error=percent(float(ln.abs().median())),
                bias=f"{percent(float(ln.median())):+.1f}", coverage=float(part.inside80.astype(bool).mean()))


def rows_of(scores: pd.DataFrame, gettext) -> list[dict]:
    """One row per generation, dtype and shape class with modelled public rows (summary's columns)."""
    modelled = scores[scores.model_seconds.notna()]
    out = [dict(generation=g, dtype=dtype, shape=gettext(SHAPE_CLASSES.get(shape, shape)), **summary(part))
           for (g, dtype, shape), part in modelled.groupby(["generation", "dtype", "shape_class"])]
    return sorted(out, key=lambda r: (generation_order(r["generation"]), r["dtype"], r["shape"]))


def context(i) -> dict | None:
    """The section's keys from results/public_scores.csv; None (no section) without modelled rows."""
    scores = i.tables.get("public_scores")
    if scores is None or not scores.model_seconds.notna().any():
        return None
    modelled = scores[scores.model_seconds.notna()]
    per = [dict(generation=g, **summary(modelled[modelled.generation == g]))
           for g in sorted(set(modelled.generation), key=generation_order)]
    return dict(public_rows=rows_of(scores, i.gettext), public_total=len(scores),
                public_modelled=len(modelled), public_sources=int(scores.source.nunique()),
                public_generations=per)


register(Section("public-scores", N_("Scored on public measurements"), HERE_TEMPLATES,
                 "sections/public_scores.j2", context, tables=("public_scores",), after="timing-model",
                 appendix="sections/appendix/public_scores.j2",
                 appendix_title=N_("Public measurements by data type and shape class")))
