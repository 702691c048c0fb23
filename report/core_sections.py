"""The core's report sections, registered in the page's order (report/sections.py): each a template
of report/templates/sections/ and a function from the run's Inputs to its keys."""
from pathlib import Path

import numpy as np
import pandas as pd
import pygments
import pygments.formatters
import pygments.lexers
from markupsafe import Markup

from tpu_matmul_repro.analysis import ablation
from tpu_matmul_repro.analysis.number_classes import CLASSES as CLASS_ORDER
from tpu_matmul_repro.analysis.number_classes import class_names, number_class, speed_classes
from tpu_matmul_repro.analysis.summaries import MIN_RANK_POINTS, estimate_methods
from tpu_matmul_repro.experiments.core.cases import config_label
from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.experiments.core.i18n import N_, glossary
from tpu_matmul_repro.experiments.core.units import unit_name
from tpu_matmul_repro.figures.catalog import model_column
from tpu_matmul_repro.figures.cite import bibtex, citation, post_attribution
from tpu_matmul_repro.figures.labels import experiment_description, join, reason_key, text
from tpu_matmul_repro.figures.plots import roofline_published
from tpu_matmul_repro.kernels import is_pallas, source_file
from tpu_matmul_repro.kernels.checks import DTYPES
from tpu_matmul_repro.report import findings, front, reproduce, sections, tables
from tpu_matmul_repro.report.advice import advice_section
from tpu_matmul_repro.report.tables import toolchain_name

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TEMPLATES = HERE / "templates"


def experiment_sections(df: pd.DataFrame) -> list[tuple[str, str, tuple[str, ...], str]]:
    """(experiment, its kernel, its dtypes, the kernel's module) for every experiment the table holds."""
    est = df[is_pallas(df.kernel)]
    out = []
    for experiment, rows in est.groupby("experiment", sort=True):
        dtypes = tuple(d for d in DTYPES if d in set(rows.dtype))
        out.append((experiment, rows.kernel.iloc[0], dtypes, source_file(rows.kernel.iloc[0])))
    return out



def highlight(path: str) -> str:
    source = (ROOT / path).read_text()
    # Markup: Pygments' own HTML (it escapes the code), trusted as is under autoescaping. Its <pre>
    # carries the type size at which the longest line fits the printed page (print_font_size).
    html = pygments.highlight(source, pygments.lexers.PythonLexer(),
                              pygments.formatters.HtmlFormatter(cssclass="highlight"))
    return Markup(html.replace("<pre>", f'<pre style="--print-size: {print_font_size(source)}">', 1))


# The printed page's text width for a listing (A4 less style.css's margins and the <pre>'s padding),
# and DejaVu Sans Mono's advance: a line of n characters is n * MONO_ADVANCE em wide.
LISTING_WIDTH_PT = (210 - 2 * 13) / 25.4 * 72 - 2 * 7.2
MONO_ADVANCE = 0.602
LISTING_MAX_PT = 8.0


def print_font_size(text: str) -> str:
    """The type size that prints `text`'s longest line on one line of the page: code is never wrapped,
    so its indentation stays Python's and code copied from the PDF runs."""
    longest = max((len(line.expandtabs()) for line in text.splitlines()), default=1)
    return f"{min(LISTING_MAX_PT, LISTING_WIDTH_PT / (MONO_ADVANCE * max(longest, 1))):.2f}pt"



# An experiment's table caption, by whether the post published numbers for it (they are under each cell).
MODELLED_CAPTIONS = {
    True: N_("%(experiment)s, %(dtype)s on %(target)s: %(unit)s modelled as the post timed it (timing model "
             "fitted to the post); under each, in grey, the post's published number"),
    False: N_("%(experiment)s, %(dtype)s on %(target)s: %(unit)s modelled as the post timed it (timing model "
              "fitted to the post)"),
}
ESTIMATED_CAPTIONS = {
    True: N_("%(experiment)s, %(dtype)s on %(target)s: estimated %(unit)s; under each, in grey, the post's "
             "published number"),
    False: N_("%(experiment)s, %(dtype)s on %(target)s: estimated %(unit)s"),
}


def kernel_sections(df, summaries_by_target, gettext, figures, listings: dict) -> list[dict]:
    summaries = {
        "v1": N_("The whole of A, B and C sits in VMEM at once: no grid, no pipelining. The post found it "
                 "fails above 1024."),
        "v2": N_("A is split into N row blocks and B into N column blocks, over an (N, N) grid with N = 4: "
                 "each step still holds the whole K (contraction) dimension."),
        "v3": N_("A 3-D grid over (bm, bk, bn) blocks; the output block stays in VMEM across the k loop and "
                 "accumulates in the output dtype."),
        "v4": N_("v3's kernel over other block sizes: the post's five and a wider search."),
        "v5": N_("v3's grid with a VMEM scratch accumulator (float32 for bfloat16 inputs, int32 for int8) "
                 "written out at the last k step."),
    }
    sections = []
    for experiment, kernel, dtypes, code in experiment_sections(df):
        found, groups = [], []
        for target, s in summaries_by_target.items():
            found += experiment_findings(experiment, s, gettext)
            for dtype in dtypes:
                # Each (dtype, target): its figure, then its table, then its block search, side by side.
                t = tables.experiment_table(df, experiment, dtype, target, gettext)
                if t["rows"]:
                    values = {"experiment": experiment, "dtype": dtype, "target": target,
                              "unit": unit_name(dtype)}
                    if t["modelled"]:  # the figure beside it draws the same column
                        caption = MODELLED_CAPTIONS[t["published"]]
                    else:
                        caption = ESTIMATED_CAPTIONS[t["published"]]
                    caption = gettext(caption)
                    t["caption"] = caption % values
                group = dict(figures=figures([f"{experiment}_{dtype}_{target}"]),
                             table=t if t["rows"] else None,
                             after=figures([f"search_{experiment}_{dtype}_{target}"]))
                if group["figures"] or group["table"] or group["after"]:
                    groups.append(group)
        listings.setdefault(code, {"path": code, "id": "code-" + Path(code).stem, "html": highlight(code)})
        title = gettext(N_("%(experiment)s: %(description)s")) % {
            "experiment": experiment, "description": experiment_description(experiment, kernel, gettext)}
        summary = gettext(summaries[experiment]) if experiment in summaries else ""
        sections.append(dict(experiment=experiment, title=title, summary=summary, findings=found,
                             groups=groups, code_path=code, code_id=listings[code]["id"]))
    return sections


def experiment_findings(experiment: str, s: dict, gettext) -> list[str]:
    """Sentences stating this run's numbers for one experiment and target (findings.claim_findings)."""
    out = []
    target = s["target"]
    for f in (f for f in s["findings"] if f["experiment"] == experiment):
        feasible, versus = f.get("feasibility"), f.get("versus")
        if f["finding"] == "compiles" and feasible is not None:
            if feasible.first_failure is not None and feasible.need_mib is not None:
                out.append(gettext("On %(target)s, %(kernel)s compiles up to %(ok)s; at %(fail)s it needs "
                                   "%(need).1f MiB of VMEM against a %(limit).0f MiB limit.") % {
                    "target": target, "kernel": experiment, "ok": feasible.largest_ok,
                    "fail": feasible.first_failure, "need": feasible.need_mib, "limit": feasible.limit_mib})
            elif feasible.largest_ok is not None:
                out.append(gettext("On %(target)s, %(kernel)s compiles at every size up to %(ok)s.") % {
                    "target": target, "kernel": experiment, "ok": feasible.largest_ok})
        elif f["finding"] == "speed" and versus is not None:
            values = {"target": target, "experiment": experiment, "edge": f["blocks"][0], "size": f["size"],
                      "blocks": str(f["blocks"]), "tflops": versus.tflops,
                      "versus": versus_text(versus, s["modelled"], gettext)}
            message = SPEED_FINDINGS[f["claim"] == "about", s["modelled"]]
            out.append(gettext(message) % values)
        elif f["finding"] == "runs_out" and feasible is not None and feasible.first_failure is not None \
                and feasible.need_mib is not None:
            out.append(gettext("On %(target)s, %(edge)s-blocks run out of VMEM from %(fail)s on: they need "
                               "%(need).1f MiB against a %(limit).0f MiB limit.") % {
                "target": target, "edge": f["blocks"][0], "fail": feasible.first_failure,
                "need": feasible.need_mib, "limit": feasible.limit_mib})
        elif f["finding"] == "best_found":
            out += best_found(s, f["dtype"], f["size"], gettext)
    return out


# A speed claim's configuration against XLA, by (the claim is about a number of some blocks, modelled)
SPEED_FINDINGS = {
    (True, True): N_("On %(target)s, %(experiment)s with %(edge)s-blocks is modelled at %(tflops).1f TFLOP/s "
                     "at %(size)s as the post timed it: %(versus)s"),
    (True, False): N_("On %(target)s, %(experiment)s with %(edge)s-blocks reaches an estimated %(tflops).1f "
                      "TFLOP/s at %(size)s: %(versus)s"),
    (False, True): N_("On %(target)s, the post's best blocks %(blocks)s are modelled at %(tflops).1f TFLOP/s "
                      "at %(size)s as the post timed them: %(versus)s"),
    (False, False): N_("On %(target)s, the post's best blocks %(blocks)s reach an estimated %(tflops).1f "
                       "TFLOP/s at %(size)s: %(versus)s"),
}


def best_found(s: dict, dtype: str, size: int, gettext) -> list[str]:
    """The best configuration this run found in `dtype` at `size`, against XLA."""
    out = []
    target = s["target"]
    for b in s["best"]:
        if b["dtype"] == dtype and b["size"] == size:
            if not pd.isna(b["fraction_of_xla"]):
                out.append(gettext("On %(target)s, the best configuration found at %(size)s is (%(bm)s, "
                                   "%(bk)s, %(bn)s), %(tflops).1f TFLOP/s by the timing model's device "
                                   "time: %(pct).0f %% of XLA's %(xla).1f (DEFAULT precision), modelled "
                                   "the same way.") % {
                    "target": target, "size": size, "bm": b["bm"], "bk": b["bk"], "bn": b["bn"],
                    "tflops": b["best_tflops"], "xla": b["xla_tflops"],
                    "pct": 100 * b["fraction_of_xla"]})
            elif not pd.isna(b.get("fraction_of_post_xla", float("nan"))):
                out.append(gettext("On %(target)s, the best configuration found at %(size)s is (%(bm)s, "
                                   "%(bk)s, %(bn)s); timed as the post did, it is modelled at "
                                   "%(tflops).1f TFLOP/s: %(pct).0f %% of the post's measured XLA, "
                                   "%(xla).1f (DEFAULT "
                                   "precision; this run's XLA estimate at %(size)s falls with size, so no "
                                   "fraction of it is given).") % {
                    "target": target, "size": size, "bm": b["bm"], "bk": b["bk"], "bn": b["bn"],
                    "tflops": b["best_post_method_tflops"], "xla": b["post_xla_tflops"],
                    "pct": 100 * b["fraction_of_post_xla"]})
    return out



# A fraction of XLA, by what it divides by: XLA at DEFAULT precision, the post's comparison, always
VERSUS = {
    ("run", True): N_("%(pct)s %% of XLA's %(xla).1f (DEFAULT precision, modelled the same way)."),
    ("run", False): N_("%(pct)s %% of XLA's estimated %(xla).1f (DEFAULT precision)."),
    "post": N_("%(pct)s %% of the post's measured XLA, %(xla).1f (DEFAULT precision; this run's XLA "
               "estimate at that size falls with size, flagged)."),
}


def versus_text(versus: findings.Versus, modelled: bool, gettext) -> str:
    """The clause giving a number as a fraction of XLA, with the XLA number it divides by."""
    key = "post" if versus.basis == "post" else (versus.basis, modelled)
    return gettext(VERSUS[key]) % {"pct": percent(versus.fraction), "xla": versus.xla}


def percent(fraction: float) -> str:
    """A fraction as a percentage: whole above 10 %, to a tenth below (7 % of XLA hides 6.5 against 7.4)."""
    pct = 100 * fraction
    return f"{pct:.0f}" if pct >= 9.95 else f"{pct:.1f}"


def one_estimator(best: pd.DataFrame) -> list[dict]:
    """best_vs_xla.csv's rows of one estimator per (target, dtype, size): the timing model's, else
    libtpu's raw estimate (beside the model's it would be a second answer to one question)."""
    if best is None or best.empty:
        return []
    rank = {"model": 0, "compiler": 1}
    best = best.assign(_rank=best.estimator.map(rank).fillna(9))
    best = best.sort_values(["target", "dtype", "size", "_rank"])
    return best.drop_duplicates(["target", "dtype", "size"]).drop(columns="_rank").to_dict("records")


def float32_note(best: list[dict], constants: pd.DataFrame, gettext) -> str:
    """One sentence and one number for float32: the model's, and why libtpu's raw estimate differs."""
    rows = [b for b in best if b["dtype"] == "float32" and b["target"] == POST_CHIP
            and b["estimator"] == "model" and not pd.isna(b["fraction_of_xla"])]
    cost = constants[constants.constant == "float32_cycles_per_kib"] if len(constants) else constants
    if not rows or cost is None or cost.empty:
        return ""
    r = max(rows, key=lambda b: b["size"])
    return gettext("float32: by the timing model's device time, the best Pallas blocks reach %(tflops).1f "
                   "TFLOP/s at %(size)s, %(pct).0f %% of XLA's %(xla).1f (DEFAULT precision). The post's "
                   "float32 Pallas times fit a cost of %(cost).2f cycles per KiB of a step's operand blocks "
                   "beside the dot (the fitted float32_cycles_per_kib, results/timing_model.csv); what "
                   "slowed its large float32 blocks was their DMAs: twice the bytes of bfloat16, and copies "
                   "that waited for the dot where the post's compiler gave a block a single buffer.") % {
        "pct": 100 * r["fraction_of_xla"], "size": r["size"], "cost": float(cost.value.iloc[0]),
        "tflops": r.get("best_tflops", float("nan")), "xla": r.get("xla_tflops", float("nan"))}



def classes_text(classes, gettext, lang: str) -> str:
    """Classes of number named as alternatives ("estimated, modelled or published")."""
    names = class_names(classes, gettext)
    if len(names) < 2:
        return "".join(names)
    return gettext("%(first)s or %(last)s") % {"first": join(lang, "list", names[:-1]), "last": names[-1]}


def report_classes(df: pd.DataFrame, main_target: str, gettext, lang: str) -> dict:
    """The class words of the report's sentences about its numbers (number_classes): this run's speeds,
    every TPU speed it shows, and the roofline's points."""
    tpu = df[df.target != "cpu"] if "target" in df else df
    speeds = speed_classes(tpu)
    shown = (["estimate"] if "modelled" in speeds else []) + speeds
    roofline = tpu[(tpu.source == "estimate") & (tpu.target == main_target)]
    roofline_class = number_class("estimate", through_model=model_column(roofline, "roofline") is not None)
    # the post's points the roofline places beside the run's (figures/plots.py: roofline_published)
    post = ["published"] if len(roofline_published(tpu, main_target)) else []
    return dict(run_speeds=classes_text([c for c in speeds if c != "published"], gettext, lang),
                shown=classes_text(sorted(set(shown), key=CLASS_ORDER.index), gettext, lang),
                roofline=classes_text([roofline_class] + post, gettext, lang))


def main_target(targets) -> str:
    """The post's chip leads; every other target's detail is in an appendix."""
    return POST_CHIP if POST_CHIP in targets else targets[0]


def other_targets(targets) -> list[str]:
    return [t for t in targets if t != main_target(targets)]


def generations(specs: dict) -> tuple[list[str], list[str]]:
    """The figures of one experiment across generations: the one the story shows (the post's headline,
    v5 in bfloat16), and the rest, in the appendix."""
    names = sorted(n for n in specs if n.startswith("generations_"))
    lead = [n for n in names if n == "generations_v5_bfloat16"] or names[:1]
    return lead, [n for n in names if n not in lead]


def result_sources() -> list[str]:
    """The results/ files the first page quotes: the core's and the studies' sections' tables."""
    return ["claims.csv", "fidelity.csv", "best_vs_xla.csv"] + [
        f"{name}.csv" for s in sections.studies() for name in s.tables]


def first_page(inputs: sections.Inputs) -> dict:
    return front.front_page(claims=inputs.model["claims_table"], fidelity=inputs.model["fidelity_table"],
                            primary=inputs.primary, gettext=inputs.gettext,
                            sources=result_sources())


def abstract(inputs: sections.Inputs) -> dict:
    page = first_page(inputs)
    return dict(front=page, sources=join(inputs.lang, "list", page["sources"]),
                verdict_counts=front.verdict_counts(page, inputs.translations, inputs.lang))


def introduction(inputs: sections.Inputs) -> dict:
    measured = inputs.rows[inputs.rows.source == "measured"] if inputs.measured is None else inputs.measured
    provenance = tables.provenance(inputs.df, measured)
    versions = reproduce.toolchain_versions(provenance)
    return dict(provenance=[dict(p, toolchain_name=toolchain_name(p["toolchain"], inputs.gettext)
                                 if p["toolchain"] else "–") for p in provenance],
                versions=[dict(v, name=toolchain_name(v["toolchain"], inputs.gettext)) for v in versions],
                record=verbatim(reproduce.benchmark_record(), ("machine", "cold")),
                commands=reproduce.COMMANDS,
                source_names={"estimate": inputs.gettext("estimated"), "measured": inputs.gettext("measured"),
                              "published": inputs.gettext("published")},
                gallery_href=f"{inputs.figures_href}/index{'' if inputs.lang == 'en' else '.' + inputs.lang}"
                             ".html")


def verbatim(record: dict | None, keys) -> dict | None:
    """`record` with the values of `keys` as code: quoted as the benchmark wrote them, in any language."""
    if record is None:
        return None
    return record | {k: Markup("<code>{}</code>").format(record[k]) for k in keys} | {
        "cores": Markup("<code>--cores 1</code>")}


def largest_compared(rows: list[dict]) -> list[dict]:
    """Of the best-vs-XLA rows, each target's and dtype's at the largest size with a fraction of XLA
    (else the largest), with the HIGHEST row beside it."""
    chosen = {}
    for r in rows:
        if r["versus"] != "DEFAULT":
            continue
        key, has = (r["target"], r["dtype"]), pd.notna(r["fraction_of_xla"])
        best_so_far = chosen.get(key)
        if best_so_far is None or (has, r["size"]) > best_so_far:
            chosen[key] = (has, r["size"])
    return [r for r in rows if chosen.get((r["target"], r["dtype"]), (None, None))[1] == r["size"]]


def best(inputs: sections.Inputs) -> dict:
    rows = one_estimator(inputs.best_vs_xla)
    post_rows = [r for r in rows if all(pd.notna(r.get(key, np.nan)) for key in (
        "best_post_method_tflops", "post_xla_tflops", "fraction_of_post_xla"))]
    shown = tables.best_vs_xla_rows(rows)
    return dict(best=shown, best_largest=largest_compared(shown), post_rows=post_rows,
                float32_note=float32_note(rows, inputs.model["constants_table"], inputs.gettext),
                estimator_names={"compiler": inputs.gettext("libtpu's estimate"),
                                 "model": inputs.gettext("timing model, device time")})


def claims(inputs: sections.Inputs) -> dict:
    """The claims as a compact table: one row per claim, its verdict under each compiler that checked it."""
    rows = inputs.model["claims"]
    toolchains = list(dict.fromkeys(r["toolchain"] for r in rows))
    pivot = {}
    for r in rows:
        pivot.setdefault(r["claim"], {})[r["toolchain"]] = r
    rows = [dict(claim=c, verdicts=[by.get(t) for t in toolchains]) for c, by in pivot.items()]
    return dict(claims_toolchains=toolchains, claims_pivot=rows,
                claims_unchecked=any(v is None for r in rows for v in r["verdicts"]),
                verdict_counts=front.verdict_counts(first_page(inputs), inputs.translations, inputs.lang))


FOOTNOTE_MARKS = ("*", "**", "***", "****")


def appendix_claims(inputs: sections.Inputs) -> dict | None:
    """Every claim with its reason and source; a reason of untested claims that repeats is said once,
    below the table, and its rows carry its mark."""
    rows = [dict(r, mark="") for r in inputs.model["claims"]]
    repeated = pd.Series([r["reason"] for r in rows if not r["tested"]]).value_counts()
    notes = [dict(mark=mark, reason=reason) for mark, reason in zip(
        FOOTNOTE_MARKS, repeated[repeated > 1].index, strict=False)]
    marks = {n["reason"]: n["mark"] for n in notes}
    for r in rows:
        if not r["tested"] and r["reason"] in marks:
            r["mark"] = marks[r["reason"]]
    return dict(claim_rows=rows, claim_notes=notes) if rows else None


def timing_model(inputs: sections.Inputs) -> dict:
    df = inputs.rows
    return dict(fidelity_figures=inputs.figures(sorted(n for n in inputs.specs if n.startswith("fidelity_"))),
                has_published=bool((df.source == "published").any()), min_rank_points=MIN_RANK_POINTS,
                ablation_margin=ablation.MARGIN,
                libtpu=next(iter(sorted(set(df[df.source == "estimate"].libtpu_version.dropna()))), "?"))


def methods_rows(inputs: sections.Inputs) -> list[dict]:
    """estimate_methods' rows, with the toolchain's name and each reason for no cycles in words."""
    def because(codes: str) -> str:
        return "; ".join(text(inputs.lang, reason_key(c)) for c in codes.split(", ") if c)

    return [dict(r, toolchain_name=toolchain_name(r["toolchain"], inputs.gettext),
                 no_cycles_because=because(r["no_cycles_because"]))
            for r in estimate_methods(inputs.rows).to_dict("records")]


def other_generations(inputs: sections.Inputs) -> dict | None:
    lead, _ = generations(inputs.specs)
    methods = methods_rows(inputs)
    if not inputs.figures(lead) and len(methods) <= 1:
        return None
    return dict(generation_figures=inputs.figures(lead), methods=methods)


def advice(inputs: sections.Inputs) -> dict | None:
    rows = advice_section(inputs.advice or {}, inputs.figures, inputs.gettext)
    return dict(advice=rows) if rows else None


def detail(inputs: sections.Inputs) -> dict:
    target = main_target(inputs.targets)
    return dict(title=inputs.gettext(N_("VMEM on %(target)s")) % {"target": target}, main_target=target,
                raised=raised_limits(inputs), vmem_figures=inputs.figures([f"vmem_{target}"]))


def appendix_experiments(inputs: sections.Inputs) -> dict | None:
    target = main_target(inputs.targets)
    summaries = {target: findings.summary(inputs.rows, target)}
    kernels = kernel_sections(inputs.rows, summaries, inputs.gettext, inputs.figures, inputs.listings)
    if not kernels:
        return None
    return dict(title=inputs.gettext(N_("Each experiment on %(target)s")) % {"target": target},
                main_target=target, kernels=kernels, roofline_figures=inputs.figures([f"roofline_{target}"]))


def measurements(inputs: sections.Inputs) -> dict | None:
    measured = inputs.rows[inputs.rows.source == "measured"] if inputs.measured is None else inputs.measured
    found = tables.measured_tables(measured)
    return dict(measured=found) if found["tables"] else None


def methods(inputs: sections.Inputs) -> dict:
    return dict(correctness=inputs.correctness, constants=fitted_constants(inputs.model, inputs.lang))


def fitted_constants(model: dict | None, lang: str) -> str:
    """The timing model's constants as fitted on every point (timing_model.csv's first fit), listed."""
    constants = (model or {}).get("constants_table")
    if constants is None or not len(constants) or "constant" not in constants:
        return ""
    first = constants[constants.fit == constants.fit.iloc[0]]
    return join(lang, "list", (f"{c} = {v:.3g}" for c, v in zip(first.constant, first.value, strict=True)))


def cite(inputs: sections.Inputs) -> dict:
    return dict(bibtex=bibtex("tpu_matmul_repro", citation().title, inputs.commit),
                post_attribution=post_attribution(inputs.lang))


def appendix_model(inputs: sections.Inputs) -> dict | None:
    m = inputs.model
    return dict(post_chip=POST_CHIP, ablation_margin=ablation.MARGIN) if (
        m["constants"] or m["ablation"] or m["bands"]) else None


def verdict_rules(inputs: sections.Inputs) -> dict | None:
    return {} if inputs.model["rules"] else None


def appendix_targets(inputs: sections.Inputs) -> dict | None:
    others = other_targets(inputs.targets)
    if not others:
        return None
    summaries = {t: findings.summary(inputs.rows, t) for t in others}
    kernels = kernel_sections(inputs.rows, summaries, inputs.gettext, inputs.figures, inputs.listings)
    if not kernels:
        return None
    text = join(inputs.lang, "list", others)
    return dict(title=inputs.gettext(N_("Other targets: %(targets)s")) % {"targets": text},
                other_targets=others, other_targets_text=text, other_kernels=kernels,
                other_vmem_figures=inputs.figures(f"vmem_{t}" for t in others),
                other_roofline_figures=inputs.figures(f"roofline_{t}" for t in others))


def appendix_generations(inputs: sections.Inputs) -> dict | None:
    lead, more = generations(inputs.specs)
    more, methods = inputs.figures(lead + more), methods_rows(inputs)
    return dict(generation_figures_all=more, methods=methods) if more or len(methods) > 1 else None


def raised_limits(inputs: sections.Inputs) -> dict:
    """{target: the post's configurations that fail at the default limit and the raised limit that fits}"""
    raised = {}
    for target in inputs.targets:
        rows = findings.raised_limit_results(inputs.rows, target)
        for r in rows:
            r["config"] = config_label(r["kernel"], r["m"], r["bm"], r["bk"], r["bn"]) or "–"
            r["fits_at"] = "–" if r["fits_at_mib"] is None else f"{r['fits_at_mib']:.0f}"
            r["tflops"] = "–" if r["tflops"] is None else f"{r['tflops']:.1f}"
        if rows:
            raised[target] = rows
    return raised


def appendix_raised(inputs: sections.Inputs) -> dict | None:
    raised = raised_limits(inputs)
    return dict(raised=raised) if raised else None


def terms(inputs: sections.Inputs) -> dict:
    return dict(glossary=list(glossary("zh")[0]))


def config(inputs: sections.Inputs) -> dict:
    return dict(config_yaml=inputs.config_yaml, config_print_size=print_font_size(inputs.config_yaml))


def code(inputs: sections.Inputs) -> dict:
    return dict(listings=list(inputs.listings.values()))


for anchor, title, body, context in (
        ("abstract", None, "abstract", abstract),
        ("contents", None, "contents", lambda i: {}),
        ("introduction", N_("The post and this reproduction"), "introduction", introduction),
        ("claims", N_("Claims checked"), "claims", claims),
        ("best", N_("The best Pallas kernel against XLA"), "best", best),
        ("timing-model", N_("Why: the timing model"), "timing_model", timing_model),
        ("generations", N_("Other TPU generations"), "generations", other_generations),
        ("advice", N_("Beyond the post: blocks for real layer shapes"), "advice", advice),
        ("detail", N_("VMEM on %(target)s"), "detail", detail),
        ("measured", N_("Measurements"), "measured", measurements),
        ("methods", N_("Methods"), "methods", methods)):
    sections.register(sections.Section(anchor, title, TEMPLATES, f"sections/{body}.j2", context, after=None))
for anchor, title, body, context in (
        ("provenance", N_("Environment and provenance"), "provenance", introduction),
        ("appendix-claims", N_("Every claim, with its reason"), "claims", appendix_claims),
        ("verdict-rules", N_("How verdicts are decided"), "verdict_rules", verdict_rules),
        ("appendix-model", N_("The timing model in depth"), "model", appendix_model),
        ("appendix-best", N_("The best Pallas kernel at every size"), "best", best),
        ("appendix-experiments", N_("Each experiment on %(target)s"), "experiments", appendix_experiments),
        ("appendix-targets", N_("Other targets: %(targets)s"), "targets", appendix_targets),
        ("appendix-generations", N_("Every experiment across TPU generations"), "generations",
         appendix_generations),
        ("appendix-advice", N_("Blocks for real layer shapes, drawn"), "advice", advice),
        ("appendix-raised", N_("Raised VMEM limits"), "raised", appendix_raised),
        ("glossary", N_("Terms"), "glossary", terms),
        ("config", N_("This run's config"), "config", config),
        ("cite", N_("How to cite"), "cite", cite),
        ("appendix-code", N_("Kernel code"), "code", code)):
    sections.register(sections.Section(anchor, title, TEMPLATES, f"sections/appendix/{body}.j2", context,
                                       after=None, part="appendix"))
