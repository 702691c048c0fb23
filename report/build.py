"""Build the report: one Jinja template, a gettext catalog per language, HTML and PDF.

English is the template's source language; the project's one catalog per language (locale/, read by
experiments/core/i18n.py, which the figures use too) holds each translation. The build refuses a catalog
that lacks, or leaves empty, any message the project marks, so the languages cannot drift apart.
"""
import base64
import io
import string
from pathlib import Path

import jinja2
import jinja2.ext
import pandas as pd
import pygments
import pygments.formatters
import pygments.lexers
import yaml
from babel.support import Translations
from markupsafe import Markup

from tpu_matmul_repro.analysis.number_classes import CLASSES as CLASS_ORDER
from tpu_matmul_repro.analysis.number_classes import class_names, number_class, speed_classes
from tpu_matmul_repro.analysis.summaries import MIN_RANK_POINTS, estimate_methods
from tpu_matmul_repro.analysis.toolchains import primary_rows
from tpu_matmul_repro.experiments.core.cases import config_label
from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.experiments.core.i18n import N_, glossary, translations
from tpu_matmul_repro.experiments.core.provenance import build_date
from tpu_matmul_repro.experiments.core.tables import write_atomic
from tpu_matmul_repro.figures import advice as advice_figure
from tpu_matmul_repro.figures.catalog import describe, model_column
from tpu_matmul_repro.figures.cite import (
    RESULTS_LICENCE,
    RESULTS_LICENCE_URL,
    bibtex,
    citation,
    post_attribution,
)
from tpu_matmul_repro.figures.labels import experiment_description, join
from tpu_matmul_repro.figures.specs import NARROW_KINDS, STUDY_SPECS, advice_specs, figure_specs_of
from tpu_matmul_repro.kernels import source_file
from tpu_matmul_repro.kernels.checks import DTYPES
from tpu_matmul_repro.report import findings, front, sections, tables
from tpu_matmul_repro.report.advice import advice_section
from tpu_matmul_repro.report.tables import toolchain_name
from tpu_matmul_repro.report.typography import keep_units

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TEMPLATES = HERE / "templates"
LANGUAGES = {"en": ("en", "English"), "zh": ("zh-Hans", "简体中文")}


def experiment_sections(df: pd.DataFrame) -> list[tuple[str, str, tuple[str, ...], str]]:
    """(experiment, its kernel, its dtypes, the kernel's module) for every experiment the table holds
    (estimated, measured or published): the kernel comes from the table and its source file from the
    registry."""
    est = df[df.kernel != "xla"]
    out = []
    for experiment, rows in est.groupby("experiment", sort=True):
        dtypes = tuple(d for d in DTYPES if d in set(rows.dtype))
        out.append((experiment, rows.kernel.iloc[0], dtypes, source_file(rows.kernel.iloc[0])))
    return out


def environment(lang: str) -> tuple[jinja2.Environment, Translations]:
    """A Jinja environment with autoescaping and the language's checked translations installed."""
    trans = translations(lang)
    # the report's templates, then those of the studies' sections (loaded by then)
    folders = [TEMPLATES, *dict.fromkeys(s.templates for s in sections.REGISTRY.values())]
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folders), autoescape=True,
                             extensions=["jinja2.ext.i18n"], undefined=jinja2.StrictUndefined)
    env.install_gettext_translations(trans, newstyle=True)
    return env, trans


class _PlainDumper(yaml.SafeDumper):
    def ignore_aliases(self, data):  # repeat shared lists instead of printing &id001 anchors
        return True


def config_text(config: dict) -> str:
    """The run's config as compact YAML (short lists on one line)."""
    return yaml.dump(config, Dumper=_PlainDumper, sort_keys=False, allow_unicode=True,
                     default_flow_style=None, width=100)


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
    so its indentation stays Python's and code copied from the PDF runs (issue 40)."""
    longest = max((len(line.expandtabs()) for line in text.splitlines()), default=1)
    return f"{min(LISTING_MAX_PT, LISTING_WIDTH_PT / (MONO_ADVANCE * max(longest, 1))):.2f}pt"


# The printed figure: its image and caption stay on one page (style.css), so the block is at most a
# third of the page's height, and what it leaves blank when it moves to the next page is too. The
# caption's lines are estimated from its length (a CJK character one em of 8 pt, a Latin one half).
FIGURE_BLOCK_MM = (297 - 2 * 14) / 3 - 20  # less the margins, the caption's label and the line kept with it
CAPTION_LINE_MM = 8 * 1.3 * 25.4 / 72
CAPTION_WIDTH_EM = (210 - 2 * 13) / 25.4 * 72 / 8


def print_height(caption: str) -> str:
    """The printed image's largest height for a figure with this caption (CSS length)."""
    ems = sum(1.0 if ord(ch) > 0x2E80 else 0.55 for ch in caption)
    lines = int(ems // CAPTION_WIDTH_EM) + 1
    return f"{max(40.0, min(85.0, FIGURE_BLOCK_MM - lines * CAPTION_LINE_MM)):.0f}mm"


WIDE_KINDS = ("vmem", "roofline", "search")  # drawn wider than a column (figures/plots.py)


def report_order(specs: dict) -> list[str]:
    """The figures' names in the order the report places them (render_pages numbers them so): the
    timing model's, the studies' sections' (their kinds: figures.specs.register), one experiment
    across generations, the advice figures, the post's chip's experiments
    (each figure, then its block search), VMEM and roofline, then the appendix's (the other targets',
    the other generations'). The gallery numbers its cards by it, so "Figure 7" is one figure in both."""
    targets = sorted({a["target"] for _, a in specs.values() if "target" in a})
    main = POST_CHIP if POST_CHIP in targets else (targets[0] if targets else "")
    generations = sorted(n for n, (k, _) in specs.items() if k == "generations")
    lead = [n for n in generations if n == "generations_v5_bfloat16"] or generations[:1]
    experiments = sorted({a["experiment"] for k, a in specs.values() if k == "experiment"})

    def kernels(of_targets):
        return [n for e in experiments for t in of_targets for d in DTYPES
                for n in (f"{e}_{d}_{t}", f"search_{e}_{d}_{t}")]

    others = [t for t in targets if t != main]
    order = (sorted(n for n in specs if n.startswith("fidelity_"))
             + sorted(n for n, (k, _) in specs.items() if k in STUDY_SPECS) + lead
             + sorted(n for n, (k, _) in specs.items() if k == "advice")
             + kernels([main]) + [f"vmem_{main}", f"roofline_{main}"]
             + kernels(others) + [f"vmem_{t}" for t in others] + [f"roofline_{t}" for t in others]
             + [n for n in generations if n not in lead])
    placed = [n for n in order if n in specs]
    return placed + [n for n in specs if n not in placed]  # a kind the report does not place: last


class Figures:
    """Numbers the report's figures by report_order (as the gallery does), each with its caption and alt text
    from the figure catalog and a line to cite it by."""

    def __init__(self, df, specs: dict, lang: str, gettext, figures_href: str, commit: str,
                 advice: dict | None = None):
        self.df, self.specs, self.lang, self.gettext = df, specs, lang, gettext
        self.href, self.commit, self.count = figures_href, commit, 0
        self.advice = advice or {}  # {shape: the advisor's table}, its figures' captions
        # numbers from the report's order of every figure, which the gallery uses too; a figure whose
        # section has no rows in this table is not placed, and its number is not reused
        self.numbers = {name: i for i, name in enumerate(report_order(specs), start=1)}

    def __call__(self, name: str) -> dict | None:
        if name not in self.specs:
            return None
        self.count += 1
        kind, args = self.specs[name]
        suffix = "" if self.lang == "en" else f".{self.lang}"
        href, base = self.href, name
        if kind == "advice":  # drawn by the advice rule into results/advice/, from its table
            info = advice_figure.describe(self.advice[args["shape"]], args["shape"], self.lang)
            href, base = str(Path(self.href).parent / "advice"), args["shape"]
        else:
            info = describe(self.df, name, kind, args, self.lang)
        c = citation()
        where = f" {c.repository}" if c.repository else ""
        values = {"authors": c.authors, "year": c.year, "name": name, "title": c.title, "version": c.version,
                  "commit": self.commit}
        cite = self.gettext("%(authors)s (%(year)s). Figure %(name)s, in %(title)s v%(version)s, commit "
                            "%(commit)s.") % values + where
        return {"number": self.numbers[name], "id": f"fig-{name}", "name": name, "wide": kind in WIDE_KINDS,
                "src": f"{href}/{base}{suffix}.png",
                # a phone's variant (figures/specs.py NARROW_KINDS), shown at narrow widths
                "narrow": f"{href}/{base}{suffix}.narrow.png" if kind in NARROW_KINDS else None,
                "files": {fmt: f"{href}/{base}{suffix}.{fmt}" for fmt in ("png", "svg", "pdf")},
                "gallery": f"{self.href}/index{suffix}.html#{name}", "alt": info["alt"],
                "caption": info["caption"], "cite": cite,
                "print_height": advice_figure.PRINT_HEIGHT if kind == "advice"
                else print_height(f"{info['caption']} {cite}"),
                "bibtex": bibtex(f"tpu_matmul_repro_{name}", name, self.commit, note=info["caption"])}

    def many(self, names) -> list[dict]:
        return [f for f in (self(n) for n in names) if f]


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


def kernel_sections(df, summaries_by_target, gettext, figures: Figures, listings: dict) -> list[dict]:
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
                              "unit": "TOP/s" if dtype == "int8" else "TFLOP/s"}
                    if t["modelled"]:  # the figure beside it draws the same column
                        caption = MODELLED_CAPTIONS[t["published"]]
                    else:
                        caption = ESTIMATED_CAPTIONS[t["published"]]
                    caption = gettext(caption)
                    t["caption"] = caption % values
                group = dict(figures=figures.many([f"{experiment}_{dtype}_{target}"]),
                             table=t if t["rows"] else None,
                             after=figures.many([f"search_{experiment}_{dtype}_{target}"]))
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
    """Sentences stating this run's numbers for one experiment and target."""
    out = []
    target = s["target"]
    if experiment in ("v1", "v2") and s[experiment] is not None:
        f = s[experiment]
        if f.first_failure is not None and f.need_mib is not None:
            out.append(gettext("On %(target)s, %(kernel)s compiles up to %(ok)s; at %(fail)s it needs "
                               "%(need).1f MiB of VMEM against a %(limit).0f MiB limit.") % {
                "target": target, "kernel": experiment, "ok": f.largest_ok, "fail": f.first_failure,
                "need": f.need_mib, "limit": f.limit_mib})
        elif f.largest_ok is not None:
            out.append(gettext("On %(target)s, %(kernel)s compiles at every size up to %(ok)s.") % {
                "target": target, "kernel": experiment, "ok": f.largest_ok})
    if experiment == "v3" and s["v3_fraction_8192"] is not None:
        message = (N_("On %(target)s, v3 with 128-blocks is modelled at %(tflops).1f TFLOP/s at 8192 as the "
                      "post timed it, %(pct).0f %% of XLA modelled the same way.") if s["modelled"]
                   else N_("On %(target)s, v3 with 128-blocks reaches an estimated %(tflops).1f TFLOP/s at "
                           "8192, %(pct).0f %% of XLA's estimate."))
        out.append(gettext(message) % {
            "target": target, "tflops": s["v3_tflops_8192"], "pct": 100 * s["v3_fraction_8192"]})
    if experiment in ("v4", "v5"):
        frac = s[f"{experiment}_post_best_fraction_8192"]
        blocks = s[f"{experiment}_post_best_blocks"]
        if frac is not None:
            message = (N_("On %(target)s, the post's best block %(blocks)s is modelled at %(pct).0f %% of "
                          "XLA at 8192, both as the post timed them.") if s["modelled"]
                       else N_("On %(target)s, the post's best block %(blocks)s reaches %(pct).0f %% of "
                               "XLA's estimate at 8192."))
            out.append(gettext(message) % {
                "target": target, "blocks": str(blocks), "pct": 100 * frac})
        f = s[f"{experiment}_1024_blocks"]
        if f is not None and f.first_failure is not None and f.need_mib is not None:
            out.append(gettext("On %(target)s, 1024-blocks run out of VMEM from %(fail)s on: they need "
                               "%(need).1f MiB against a %(limit).0f MiB limit.") % {
                "target": target, "fail": f.first_failure, "need": f.need_mib, "limit": f.limit_mib})
        dtype = "float32" if experiment == "v4" else "bfloat16"
        for b in s["best"]:
            if b["dtype"] == dtype and b["size"] == 8192:
                if not pd.isna(b["fraction_of_xla"]):
                    out.append(gettext("On %(target)s, the best configuration found at 8192 is (%(bm)s, "
                                       "%(bk)s, %(bn)s), at %(pct).0f %% of XLA by the timing model's device "
                                       "time.") % {
                        "target": target, "bm": b["bm"], "bk": b["bk"], "bn": b["bn"],
                        "pct": 100 * b["fraction_of_xla"]})
                elif not pd.isna(b.get("fraction_of_post_xla", float("nan"))):
                    out.append(gettext("On %(target)s, the best configuration found at 8192 is (%(bm)s, "
                                       "%(bk)s, %(bn)s); timed as the post did, it is modelled at %(pct).0f "
                                       "%% of the post's measured XLA (this run's XLA estimate at 8192 falls "
                                       "with size, so no fraction of it is given).") % {
                        "target": target, "bm": b["bm"], "bk": b["bk"], "bn": b["bn"],
                        "pct": 100 * b["fraction_of_post_xla"]})
    return out


def classes_text(classes, gettext, lang: str) -> str:
    """Classes of number named as alternatives ("estimated, modelled or published")."""
    names = class_names(classes, gettext)
    if len(names) < 2:
        return "".join(names)
    return gettext("%(first)s or %(last)s") % {"first": join(lang, "list", names[:-1]), "last": names[-1]}


def report_classes(df: pd.DataFrame, main_target: str, gettext, lang: str) -> dict:
    """The class words of the report's sentences about its numbers, from the rows (number_classes):
    `run_speeds` this run's speeds, `shown` every TPU speed it shows (libtpu's raw estimate stays
    beside the timing model's in the fidelity figure), `roofline` the roofline's points."""
    tpu = df[df.target != "cpu"] if "target" in df else df
    speeds = speed_classes(tpu)
    shown = (["estimate"] if "modelled" in speeds else []) + speeds
    roofline = tpu[(tpu.source == "estimate") & (tpu.target == main_target)]
    roofline_class = number_class("estimate", through_model=model_column(roofline, "roofline") is not None)
    return dict(run_speeds=classes_text([c for c in speeds if c != "published"], gettext, lang),
                shown=classes_text(sorted(set(shown), key=CLASS_ORDER.index), gettext, lang),
                roofline=classes_text([roofline_class], gettext, lang))


def render_html(df: pd.DataFrame, *, for_pdf: bool = False, **kwargs) -> str:
    """The report's HTML page (for_pdf: the HTML its PDF is typeset from); see render_pages."""
    return render_pages(df, **kwargs)[1 if for_pdf else 0]


def render_pages(df: pd.DataFrame, *, lang: str, config_yaml: str, targets: list[str], figure_names,
                 correctness: dict, figures_href: str = "../figures",
                 primary_toolchain: str | None = None, served: dict | None = None,
                 claims: pd.DataFrame | None = None, fidelity: pd.DataFrame | None = None,
                 constants: pd.DataFrame | None = None, best_vs_xla: pd.DataFrame | None = None,
                 study_tables: dict | None = None,
                 measured: pd.DataFrame | None = None, advice: dict | None = None) -> tuple[str, str]:
    """The report in `lang`: its HTML page and the HTML its PDF is typeset from (links to the other
    language's PDF, every details element open), from one reading of the table. `figure_names`: the
    run's figures, as {name: (kind, args)} (figures.specs.figure_specs) or names. claims, fidelity,
    constants and best_vs_xla are the results/*.csv of those names; each is computed from `df` when
    not given; `study_tables`: {name: results/<name>.csv} for the loaded studies' sections
    (report/sections.py), which likewise compute what is not given. `measured`: every measured row
    (analysis.runs.read_measured) where `df` holds each target's latest run only; by
    default `df`'s. `advice`: {shape: the advisor's
    table} (results/advice/<shape>.csv), for the "beyond the post" section."""
    from tpu_matmul_repro.analysis.summaries import best_vs_xla as best_table

    env, trans = environment(lang)
    gettext = trans.gettext
    # The studies' sections may read every toolchain's estimates; the rest of the report each target's
    # own compiler's: the pipeline's, or the toolchain `served` names for it.
    every_toolchain = df
    df = primary_rows(df, primary_toolchain, served)
    measured = df[df.source == "measured"] if measured is None else measured
    model = tables.timing_model_section(df, gettext, claims=claims, fidelity=fidelity, constants=constants)
    if best_vs_xla is None:
        best_vs_xla = best_table(df)
    study_tables = study_tables or {}
    sources = ["claims.csv", "fidelity.csv", "best_vs_xla.csv"] + [
        f"{name}.csv" for s in sections.REGISTRY.values() for name in s.tables]
    first_page = front.front_page(claims=model["claims_table"], fidelity=model["fidelity_table"],
                                  best=best_vs_xla, primary=primary_toolchain, gettext=gettext,
                                  sources=sources)
    other = "zh" if lang == "en" else "en"
    git_shas = sorted(set(df.git_sha.dropna())) if "git_sha" in df else []
    commit = ", ".join(git_shas) or gettext("unknown")
    advice = advice or {}
    specs = figure_specs_of(figure_names) | advice_specs(advice)
    figures = Figures(df, specs, lang, gettext, figures_href, commit, advice)
    listings = {}
    raised = {}
    for target in targets:
        rows = findings.raised_limit_results(df, target)
        for r in rows:
            r["config"] = config_label(r["kernel"], r["m"], r["bm"], r["bk"], r["bn"]) or "–"
            r["fits_at"] = "–" if r["fits_at_mib"] is None else f"{r['fits_at_mib']:.0f}"
            r["tflops"] = "–" if r["tflops"] is None else f"{r['tflops']:.1f}"
        if rows:
            raised[target] = rows
    # The post's chip leads; every other target's detail is in an appendix.
    main_target = POST_CHIP if POST_CHIP in targets else targets[0]
    other_targets = [t for t in targets if t != main_target]
    summaries_by_target = {t: findings.summary(df, t) for t in targets}
    # Figures are numbered in the order the template places them: the timing model, the studies',
    # generations, the main target's experiments, VMEM and roofline, then the appendix's.
    fidelity_figures = figures.many(sorted(n for n in specs if n.startswith("fidelity_")))
    studies = sections.rendered(sections.Inputs(
        df=every_toolchain, tables={name: study_tables.get(name) for s in sections.REGISTRY.values()
                                    for name in s.tables},
        primary=primary_toolchain, gettext=gettext, figures=figures.many, specs=specs,
        ngettext=trans.ngettext))
    # one experiment across generations in the story (the post's headline, v5 in bfloat16), the rest after
    generations = sorted(n for n in specs if n.startswith("generations_"))
    lead = [n for n in generations if n == "generations_v5_bfloat16"] or generations[:1]
    generation_figures = figures.many(lead)
    kernels = kernel_sections(df, {main_target: summaries_by_target[main_target]}, gettext, figures, listings)
    vmem_figures = figures.many([f"vmem_{main_target}"])
    roofline_figures = figures.many([f"roofline_{main_target}"])
    other_kernels = (kernel_sections(df, {t: summaries_by_target[t] for t in other_targets}, gettext, figures,
                                     listings) if other_targets else [])
    other_vmem_figures = figures.many(f"vmem_{t}" for t in other_targets)
    other_roofline_figures = figures.many(f"roofline_{t}" for t in other_targets)
    more_generation_figures = figures.many(n for n in generations if n not in lead)
    c = citation()
    best = one_estimator(best_vs_xla)
    methods = [dict(r, toolchain_name=toolchain_name(r["toolchain"], gettext))
               for r in estimate_methods(df).to_dict("records")]
    libtpu = next(iter(sorted(set(df[df.source == "estimate"].libtpu_version.dropna()))), "?")
    date = build_date()  # SOURCE_DATE_EPOCH, else the commit's time: the same bytes on any day
    context = dict(
        lang_tag=LANGUAGES[lang][0], other_name=LANGUAGES[other][1],
        # The project's own stylesheets, trusted as is; everything else is autoescaped.
        css=Markup((TEMPLATES / "style.css").read_text()),
        code_css=Markup(pygments.formatters.HtmlFormatter(cssclass="highlight").get_style_defs(".highlight")),
        date=date.isoformat(), git_sha=commit,
        tpu_measured=bool(((df.source == "measured") & (df.target != "cpu")).any()),
        number_classes=report_classes(df, main_target, gettext, lang),
        measured=tables.measured_tables(measured),
        provenance=tables.provenance(df, measured),
        source_names={"estimate": gettext("estimated"), "measured": gettext("measured"),
                      "published": gettext("published")},
        # between sentences and after a label: Chinese runs on without a space and has its own colon
        sep="" if lang == "zh" else " ", colon="：" if lang == "zh" else ":",
        sources=join(lang, "list", first_page["sources"]), min_rank_points=MIN_RANK_POINTS,
        config_yaml=config_yaml, config_print_size=print_font_size(config_yaml), front=first_page,
        main_target=main_target, other_targets=other_targets,
        kernels=kernels, vmem_figures=vmem_figures, roofline_figures=roofline_figures,
        other_kernels=other_kernels, other_vmem_figures=other_vmem_figures,
        other_roofline_figures=other_roofline_figures, more_generation_figures=more_generation_figures,
        raised=raised, best=best, generation_figures=generation_figures,
        advice=advice_section(advice, figures, gettext),
        float32_note=float32_note(best, model["constants_table"], gettext),
        methods=methods, verdict_counts=front.verdict_counts(first_page, trans, lang),
        other_targets_text=join(lang, "list", other_targets),
        has_published=bool((df.source == "published").any()), libtpu=libtpu,
        fidelity_figures=fidelity_figures,
        correctness=correctness, bibtex=bibtex("tpu_matmul_repro", c.title, commit),
        citation=c, post_attribution=post_attribution(lang), licence=RESULTS_LICENCE,
        licence_url=RESULTS_LICENCE_URL, listings=list(listings.values()),
        glossary=list(glossary("zh")[0]),
        gallery_href=f"{figures_href}/index{'' if lang == 'en' else '.' + lang}.html",
        studies=studies,
        model=model,
        precision_names={d: gettext(t) for d, t in tables.PRECISION_NAMES.items()},
        estimator_names={"compiler": gettext("libtpu's estimate"),
                         "model": gettext("timing model, device time"),
                         "model_only": gettext("timing model only, no compiler cycles")},
    )
    template = env.get_template("report.html.j2")
    # a number keeps its unit on its line (report/typography.py)
    return tuple(keep_units(template.render(**context, for_pdf=for_pdf,
                                            details_open=" open" if for_pdf else "",
                                            other_href=f"report.{other}.{'pdf' if for_pdf else 'html'}"))
                 for for_pdf in (False, True))


def one_estimator(best: pd.DataFrame) -> list[dict]:
    """best_vs_xla.csv's rows of one estimator per (target, dtype, size): the timing model's device
    time, else its model-only estimate, else libtpu's raw estimate (a run without a fit). The raw
    estimate beside the model's would be a second answer to one question (issue 26)."""
    if best is None or best.empty:
        return []
    rank = {"model": 0, "model_only": 1, "compiler": 2}
    best = best.assign(_rank=best.estimator.map(rank).fillna(9))
    best = best.sort_values(["target", "dtype", "size", "_rank"])
    return best.drop_duplicates(["target", "dtype", "size"]).drop(columns="_rank").to_dict("records")


def float32_note(best: list[dict], constants: pd.DataFrame, gettext) -> str:
    """One sentence and one number for float32: the model's, and why libtpu's raw estimate differs."""
    rows = [b for b in best if b["dtype"] == "float32" and b["target"] == POST_CHIP
            and b["estimator"] == "model" and not pd.isna(b["fraction_of_xla"])]
    factor = constants[constants.constant == "float32_factor"] if len(constants) else constants
    if not rows or factor is None or factor.empty:
        return ""
    r = max(rows, key=lambda b: b["size"])
    return gettext("float32: by the timing model, the best Pallas blocks reach %(pct).0f %% of XLA at "
                   "%(size)s. The post's float32 Pallas times fit a dot %(factor).2f times one bfloat16 "
                   "MXU pass (the fitted float32_factor, results/timing_model.csv); what slowed its large "
                   "float32 blocks was their DMAs: twice the bytes of bfloat16, and copies that waited for "
                   "the dot where the post's compiler gave a block a single buffer.") % {
        "pct": 100 * r["fraction_of_xla"], "size": r["size"], "factor": float(factor.value.iloc[0])}


def subset_font(font_path, text: str, flavor: str | None = None) -> bytes:
    """The font file at `font_path` cut down to the glyphs of `text`'s characters (with every layout
    feature, so shaping is unchanged), as an OpenType file or, with `flavor="woff2"`, a web font."""
    from fontTools import subset

    options = subset.Options()
    options.flavor = flavor
    options.layout_features = ["*"]
    font = subset.load_font(str(font_path), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=text)
    subsetter.subset(font)
    buffer = io.BytesIO()
    subset.save_font(font, buffer, options)
    return buffer.getvalue()


def embed_cjk_font(html: str, font_path) -> str:
    """Embed the CJK font, subset to the page's non-ASCII characters, as a WOFF2 data URI.

    The HTML then shows Chinese on any machine, offline, with no system CJK font and no web font
    service; only the glyphs the page uses travel with it (a few hundred KB, not 16 MB).
    """
    chars = sorted({ch for ch in html if ord(ch) > 0x7F})
    if not chars:
        return html
    data = base64.b64encode(subset_font(font_path, "".join(chars), flavor="woff2")).decode("ascii")
    face = (f'<style>@font-face {{ font-family: "Report CJK"; '
            f'src: url(data:font/woff2;base64,{data}) format("woff2"); }}</style>')
    return html.replace("</head>", face + "\n</head>", 1)


PDF_CJK_FAMILY = "tpu-matmul-repro Noto Sans CJK SC"  # the bundled font's name inside the PDF's styles


# Characters WeasyPrint draws that the page's source need not hold: list markers (disc, circle, square),
# the hyphen it breaks words with, an ellipsis, a no-break space.
RENDERER_CHARACTERS = "\u2022\u25e6\u25aa\u2010\u2026\u00a0"


def pdf_stylesheets(html: str, font_path):
    """The user stylesheet and font configuration WeasyPrint typesets the report's PDF with: the CJK
    font loaded from its file, cut down to the page's characters (its style sheet is inline, so
    generated text such as section numbers is among them)."""
    import weasyprint
    from weasyprint.text.fonts import FontConfiguration

    text = "".join(sorted(set(html) | set(string.printable) | set(RENDERER_CHARACTERS)))
    data = base64.b64encode(subset_font(font_path, text)).decode("ascii")
    fonts = FontConfiguration()  # @font-face rules only load through a shared FontConfiguration
    # Under a family name no installed font has, and !important: this is a user stylesheet, which the
    # page's own font list (style.css) outranks otherwise, and a CJK character missing from that list
    # went to whatever CJK font fontconfig has (Debian's fonts-noto-cjk: Japanese glyph forms).
    family = f'"{PDF_CJK_FAMILY}"'
    font_css = weasyprint.CSS(string=(
        f'@font-face {{ font-family: {family}; src: url(data:font/otf;base64,{data}); }}'
        f'html {{ font-family: {family}, "DejaVu Sans", sans-serif !important; }}'
        f'code, pre, kbd, samp, tt {{ font-family: "DejaVu Sans Mono", {family}, monospace !important; }}'),
        font_config=fonts)
    return [font_css], fonts


def write_pdf(html: str, base_url: str, pdf_path, font_path, attachments=()) -> None:
    """Render the HTML with WeasyPrint, the CJK font loaded from its file (embedded and subset), and
    `attachments` (files under the repository, e.g. the kernels the appendix lists) embedded whole, so
    that a reader takes the code from the file rather than from the page's text.

    The font reaches WeasyPrint already cut down to the page's characters. WeasyPrint keeps a font's
    glyph ids when it subsets, and without HarfBuzz's subsetter it went through all of the 16 MB font's
    glyphs in Python, several times per PDF; the glyphs it draws are the same either way."""
    import datetime

    import weasyprint

    stylesheets, fonts = pdf_stylesheets(html, font_path)
    # dated by the build, not by the clock: the same inputs give the same bytes
    when = datetime.datetime.combine(build_date(), datetime.time(), tzinfo=datetime.timezone.utc)
    files = [weasyprint.Attachment(filename=str(ROOT / path), name=path.replace("/", "_"), description=path,
                                   created=when, modified=when) for path in attachments]
    document = weasyprint.HTML(string=html, base_url=base_url)
    write_atomic(pdf_path, lambda tmp: document.write_pdf(tmp, stylesheets=stylesheets, font_config=fonts,
                                                          attachments=files))


def listing_paths(df: pd.DataFrame) -> list[str]:
    """The kernel files the report's appendix lists (the PDF carries each as an attachment)."""
    return list(dict.fromkeys(section[-1] for section in experiment_sections(df)))
