"""The report's first page: an abstract and a "Key findings" box, every number read from the run's
result files (claims.csv, fidelity.csv, best_vs_xla.csv and the studies'), never from the template."""
import json

import numpy as np
import pandas as pd

from tpu_matmul_repro.experiments.core.i18n import N_
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
    return dict(n=int(r.n), pct=100 * (np.exp(r.median_abs_log_ratio) - 1))


# The findings table's cells, by kind of claim (analysis/claims.py: Claim.kind), from a claims.csv row's
# values: the post's numbers, this run's with its 80 % band where it has one, and the test in a few words.
POST_CELLS = {
    "compiles": N_("compiles up to %(post_ok)s, fails from %(post_fail)s"),
    "about": N_("%(post).1f TFLOP/s"),
    "best": N_("%(claimed)s %(post_claimed_tflops).1f against %(post_rival)s %(post_rival_tflops).1f "
               "TFLOP/s"),
    "near": N_("%(post).1f TFLOP/s, %(post_pct).0f %% of XLA's %(post_xla).1f"),
    "beats": N_("bfloat16 %(post_bf16).1f against float32 %(post_f32).1f TFLOP/s"),
}
RUN_CELLS = {
    "compiles": N_("compiles up to %(ok)s, fails from %(fail)s"),
    "about": N_("%(ours).1f TFLOP/s [%(lo).1f–%(hi).1f]"),
    "best": N_("%(claimed_tflops).1f against %(rival)s %(rival_tflops).1f TFLOP/s: ratio %(ratio).2f "
               "[%(ratio_lo).2f–%(ratio_hi).2f]"),
    "near": N_("%(ours).1f TFLOP/s, %(pct).0f %% of XLA's %(xla).1f [%(pct_lo).0f–%(pct_hi).0f %%]"),
    "beats": N_("bfloat16 %(bf16).1f against float32 %(f32).1f TFLOP/s: ratio %(ratio).2f "
                "[%(ratio_lo).2f–%(ratio_hi).2f]"),
}
# a compile claim where no size fails: the cell says so instead of "fails from –"
POST_NEVER_FAILS = {"compiles": N_("compiles at every size up to %(post_ok)s")}
RUN_NEVER_FAILS = {"compiles": N_("compiles at every size up to %(ok)s")}
TEST_CELLS = {
    "compiles": N_("Largest size that compiles, first that fails, at the default VMEM limit."),
    "about": N_("Within a factor %(about_factor).2f of the claimed number; the post's too."),
    "best": N_("The claimed blocks faster than the fastest other; the post's too."),
    "near": N_("At least %(near_pct).0f %% of XLA's TFLOP/s; the post's ratio too."),
    "beats": N_("bfloat16 faster than float32 (ratio above 1); the post's too."),
}
VERDICT_WITH = N_("%(verdict)s with %(compiler)s")


def cell(messages: dict, kind: str, values: dict, gettext) -> str:
    """A findings-table cell of a claim's kind, filled from its values ("–" where they lack a number)."""
    from tpu_matmul_repro.analysis.claims import RULE_VALUES

    if kind not in messages:
        return "–"
    if kind == "compiles":  # no size fails: no "fails from –"
        never, key = (POST_NEVER_FAILS, "post_fail") if messages is POST_CELLS else (RUN_NEVER_FAILS, "fail")
        if key in values and values[key] in ("–", None):
            messages = never
    try:
        return gettext(messages[kind]) % (RULE_VALUES | values)
    except (KeyError, TypeError, ValueError):
        return "–"


def claim_rows(claims: pd.DataFrame | None, primary: str | None, gettext) -> list[dict]:
    """One row per claim: the post's number, this run's with its band, the verdict (and a study's under
    other toolchains) and the test in a few words."""
    from tpu_matmul_repro.analysis.claims import registry

    if claims is None or claims.empty or "claim_id" not in claims:
        return []
    mine = claims[claims.toolchain == primary] if primary in set(claims.toolchain) else claims
    mine = mine.drop_duplicates("claim_id")
    others = claims[claims.toolchain != mine.toolchain.iloc[0]]
    rows, claims_by_id = [], registry()
    for r in mine.itertuples():
        values, kind = json.loads(r.values), claims_by_id[r.claim_id].kind
        # the other toolchains in the claims' order: the eras, oldest first
        verdicts = [(r.toolchain, r.verdict)] + [(o.toolchain, o.verdict) for o in others[
            others.claim_id == r.claim_id].itertuples()]
        if kind == "compiles":
            verdict = gettext("; ").join(gettext(VERDICT_WITH) % {"verdict": gettext(VERDICT_NAMES[v]),
                                                                  "compiler": toolchain_name(t, gettext)}
                                         for t, v in verdicts)
        else:
            verdict = gettext(VERDICT_NAMES[r.verdict])
        tested = r.reason_id != "missing"
        rows.append(dict(claim=gettext(claims_by_id[r.claim_id].wording), verdict=verdict,
                         verdict_class=r.verdict.replace(" ", "-"),
                         post=cell(POST_CELLS, kind, values, gettext),
                         this_run=cell(RUN_CELLS, kind, values, gettext) if tested else "–",
                         test=cell(TEST_CELLS, kind, values, gettext),
                         source=gettext(SOURCE_KINDS.get(r.source_kind, "none"))))
    return rows


def front_page(*, claims, fidelity, primary, gettext, sources=()) -> dict:
    """Context for the abstract and the key findings box (`sources`: the results/ files it quotes)."""
    rows = claim_rows(claims, primary, gettext)
    counts = {v: 0 for v in VERDICT_NAMES}
    mine = claims[claims.toolchain == primary] if claims is not None and len(claims) and primary in set(
        claims.toolchain) else claims
    if mine is not None and len(mine):
        for verdict in mine.drop_duplicates("claim_id").verdict:
            counts[verdict] = counts.get(verdict, 0) + 1
    return dict(claims=rows, n_claims=sum(counts.values()),
                holds=counts["holds"], differs=counts["differs"],
                untested=counts["not tested"], inconclusive=counts.get("inconclusive", 0),
                model=fidelity_score(fidelity, OUT_OF_SAMPLE),
                raw=fidelity_score(fidelity, RAW), sources=list(sources))


def verdict_counts(front: dict, trans, lang: str) -> str:
    """The abstract's sentence of the claims' verdicts ("Of the post's 7 claims, 4 hold, ..."); "" without
    claims."""
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
