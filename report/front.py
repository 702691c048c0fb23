"""The report's first page: an abstract and a "Key findings" box, read from the run's result files.

Every number here comes from results/claims.csv, fidelity.csv and best_vs_xla.csv (or the same tables
computed from the run's table), and the studies' sections' own files (report/sections.py), never from
the template: a test builds the page from fixture files and finds their numbers in it. Messages are
marked N_() and extracted by experiments/core/i18n.py, so a missing translation stops the build.
"""
import json

import numpy as np
import pandas as pd

from tpu_matmul_repro.experiments.core.cases import config_label
from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.experiments.core.i18n import N_
from tpu_matmul_repro.kernels.checks import DTYPES
from tpu_matmul_repro.report.tables import VERDICT_NAMES, toolchain_name

# The out-of-sample score the abstract quotes: each of the post's figures predicted by a fit that
# never saw it (analysis/validation.py), over every point both sides completed.
OUT_OF_SAMPLE = ("model", "leave one experiment out")
RAW = ("compiler", "none (libtpu's estimate)")
SOURCE_KINDS = {"compile": N_("compiler's VMEM verdict"), "model": N_("timing model, out of sample"),
                "measured": N_("measured"), "none": N_("no data")}


def fidelity_score(fidelity: pd.DataFrame, key: tuple, scope: str = "all") -> dict | None:
    """n and the median |log ratio| of one estimator over one scope of fidelity.csv (None if absent)."""
    need = {"estimator", "validation", "scope", "group", "n", "median_abs_log_ratio"}
    if fidelity is None or not need <= set(fidelity):
        return None
    hit = fidelity[(fidelity.estimator == key[0]) & (fidelity.validation.str.startswith(key[1]))
                   & (fidelity.scope == scope) & (fidelity.group == "all")]
    if hit.empty or not hit.n.iloc[0] or pd.isna(hit.median_abs_log_ratio.iloc[0]):
        return None
    r = hit.iloc[0]
    return dict(n=int(r.n), mal=float(r.median_abs_log_ratio), pct=100 * (np.exp(r.median_abs_log_ratio) - 1))


def best_at(best: pd.DataFrame | None, target: str = POST_CHIP) -> list[dict]:
    """The best Pallas configuration against XLA per data type at the largest size, by the timing
    model (device time, the estimator the report uses throughout)."""
    if best is None or best.empty or "estimator" not in best:
        return []
    part = best[(best.target == target) & (best.estimator == "model")]
    out = []
    for dtype in DTYPES:
        rows = part[part.dtype == dtype]
        if rows.empty:
            continue
        r = rows.sort_values("size").iloc[-1].to_dict()  # a dict: a Series' .size is its length
        fraction, post = r["fraction_of_xla"], r.get("fraction_of_post_xla", np.nan)
        out.append(dict(dtype=dtype, size=int(r["size"]),
                        blocks=config_label(r["kernel"], r["size"], r["bm"], r["bk"], r["bn"]),
                        fraction=None if pd.isna(fraction) else float(fraction),
                        post_fraction=None if pd.isna(post) else float(post), flagged=bool(r["xla_flagged"])))
    return out


def claim_rows(claims: pd.DataFrame | None, primary: str | None, gettext) -> list[dict]:
    """One row per claim under the pipeline's compiler, with the verdicts of any other toolchain beside
    it (the rows a study adds, report/sections.py: Section.claims)."""
    from tpu_matmul_repro.analysis.claims import CLAIMS, reason_text
    from tpu_matmul_repro.report.tables import _text

    if claims is None or claims.empty or "claim_id" not in claims:
        return []
    mine = claims[claims.toolchain == primary] if primary in set(claims.toolchain) else claims
    mine = mine.drop_duplicates("claim_id")
    others = claims[claims.toolchain != mine.toolchain.iloc[0]]
    rows = []
    for r in mine.itertuples():
        values = json.loads(r.values)
        # one cell per other toolchain, "–" for a claim not checked under it
        mine_other = {o.toolchain: o for o in others[others.claim_id == r.claim_id].itertuples()}
        then = [dict(verdict=gettext(VERDICT_NAMES[mine_other[t].verdict]),
                     verdict_class=mine_other[t].verdict.replace(" ", "-")) if t in mine_other else None
                for t in dict.fromkeys(others.toolchain)]
        rows.append(dict(claim=gettext(CLAIMS[r.claim_id]), verdict=gettext(VERDICT_NAMES[r.verdict]),
                         verdict_class=r.verdict.replace(" ", "-"),
                         evidence=reason_text(r.reason_id, _text(getattr(r, "note_id", "")), values, gettext),
                         source=gettext(SOURCE_KINDS.get(r.source_kind, "none")), then=then))
    return rows


def front_page(*, claims, fidelity, best, primary, gettext, sources=()) -> dict:
    """Context for the abstract and the key findings box (`sources`: the results/ files it quotes)."""
    rows = claim_rows(claims, primary, gettext)
    counts = {v: 0 for v in VERDICT_NAMES}
    mine = claims[claims.toolchain == primary] if claims is not None and len(claims) and primary in set(
        claims.toolchain) else claims
    if mine is not None and len(mine):
        for verdict in mine.drop_duplicates("claim_id").verdict:
            counts[verdict] = counts.get(verdict, 0) + 1
    other_toolchains = []
    if claims is not None and len(claims) and rows:
        first = claims[claims.toolchain == primary] if primary in set(claims.toolchain) else claims
        other_toolchains = [toolchain_name(t, gettext)  # in the claims' order: the eras, oldest first
                            for t in dict.fromkeys(claims.toolchain) if t != first.toolchain.iloc[0]]
    return dict(claims=rows, other_toolchains=other_toolchains, n_claims=sum(counts.values()),
                holds=counts["holds"], differs=counts["differs"],
                untested=counts["not tested"], inconclusive=counts.get("inconclusive", 0),
                model=fidelity_score(fidelity, OUT_OF_SAMPLE),
                raw=fidelity_score(fidelity, RAW), best=best_at(best), sources=list(sources))


def verdict_counts(front: dict, trans, lang: str) -> str:
    """The abstract's sentence of the claims' verdicts ("Of the post's 7 claims, 4 hold, 1 differs and
    2 are inconclusive ..."): a clause per verdict that some claim has, each with its plural (`trans`:
    the language's Translations); "" without claims."""
    n = front["n_claims"]
    if not n:
        return ""
    ngettext = trans.ngettext
    clauses = []
    if front["holds"]:
        clauses.append(ngettext("%(num)s holds", "%(num)s hold", front["holds"]) % {"num": front["holds"]})
    if front["differs"]:
        clauses.append(ngettext("%(num)s differs", "%(num)s differ", front["differs"])
                       % {"num": front["differs"]})
    if front["inconclusive"]:
        clauses.append(ngettext("%(num)s is inconclusive within the timing model's 80 %% interval",
                                "%(num)s are inconclusive within the timing model's 80 %% interval",
                                front["inconclusive"]) % {"num": front["inconclusive"]})
    if front["untested"]:
        clauses.append(ngettext("%(num)s could not be tested with this run's data",
                                "%(num)s could not be tested with this run's data", front["untested"])
                       % {"num": front["untested"]})
    if lang == "en":
        listed = clauses[0] if len(clauses) == 1 else ", ".join(clauses[:-1]) + " and " + clauses[-1]
    else:  # a language joins clauses with its own comma
        listed = trans.pgettext("between clauses", ", ").join(clauses)
    return ngettext("Of the post's %(num)s claim, %(clauses)s.", "Of the post's %(num)s claims, %(clauses)s.",
                    n) % {"num": n, "clauses": listed}
