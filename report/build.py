"""Build the report: its sections' templates (report/sections.py), a gettext catalog per language
(refused where it lacks any marked message, so the languages cannot drift apart), HTML and PDF."""
import base64
import contextlib
import dataclasses
import io
import os
import string
from pathlib import Path

import jinja2
import jinja2.ext
import pandas as pd
import pygments.formatters
import yaml
from babel.support import Translations
from markupsafe import Markup

from tpu_matmul_repro.analysis.toolchain_rows import primary_rows
from tpu_matmul_repro.experiments.core.atomic_write import write_atomic
from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.experiments.core.i18n import translations
from tpu_matmul_repro.experiments.core.provenance import build_date
from tpu_matmul_repro.figures import advice_figure
from tpu_matmul_repro.figures.catalog import describe
from tpu_matmul_repro.figures.cite import (
    RESULTS_LICENCE,
    RESULTS_LICENCE_URL,
    bibtex,
    citation,
)
from tpu_matmul_repro.figures.figure_specs import (
    LANGUAGE_NAMES,
    NARROW_KINDS,
    STUDY_SPECS,
    advice_specs,
    figure_specs_of,
)
from tpu_matmul_repro.kernels.checks import DTYPES
from tpu_matmul_repro.report import (  # noqa: F401  (core_sections, public_scores: register sections)
    core_sections,
    public_scores,
    sections,
    tables,
)
from tpu_matmul_repro.report.typography import keep_units, space_cjk

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TEMPLATES = HERE / "templates"


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


WIDE_KINDS = ("vmem", "roofline", "search")  # drawn wider than a column (figures/plots.py)


def report_order(specs: dict) -> list[str]:
    """The figures' names in the order the report places them; the gallery numbers its cards by it too,
    so "Figure 7" is one figure in both."""
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
             + sorted(n for n, (k, _) in specs.items() if k in STUDY_SPECS)
             + [f"vmem_{main}"] + kernels([main]) + [f"roofline_{main}"]
             + kernels(others) + [f"vmem_{t}" for t in others] + [f"roofline_{t}" for t in others]
             + lead + [n for n in generations if n not in lead]
             + sorted(n for n, (k, _) in specs.items() if k == "advice"))
    placed = [n for n in order if n in specs]
    return placed + [n for n in specs if n not in placed]  # a kind the report does not place: last


class Figures:
    """The report's figures numbered by report_order, each with its caption, alt text and citation."""

    def __init__(self, df, specs: dict, lang: str, gettext, figures_href: str, commit: str,
                 advice: dict | None = None, model=None):
        self.df, self.specs, self.lang, self.gettext, self.model = df, specs, lang, gettext, model
        self.href, self.commit = figures_href, commit
        self.advice = advice or {}  # {shape: the advisor's table}, its figures' captions
        # numbers from the report's order of every figure, which the gallery uses too; a figure whose
        # section has no rows in this table is not placed, and its number is not reused
        self.numbers = {name: i for i, name in enumerate(report_order(specs), start=1)}

    def __call__(self, name: str) -> dict | None:
        if name not in self.specs:
            return None
        kind, args = self.specs[name]
        suffix = "" if self.lang == "en" else f".{self.lang}"
        href, base = self.href, name
        if kind == "advice":  # drawn by the advice rule into results/advice/, from its table
            info = advice_figure.describe(self.advice[args["shape"]], args["shape"], self.lang)
            href, base = str(Path(self.href).parent / "advice"), args["shape"]
        else:
            info = describe(self.df, name, kind, args, self.lang, model=self.model)
        c = citation()
        where = f" {c.repository}" if c.repository else ""
        values = {"authors": c.authors, "year": c.year, "name": name, "title": c.title, "version": c.version,
                  "commit": self.commit}
        cite = self.gettext("%(authors)s (%(year)s). Figure %(name)s, in %(title)s v%(version)s, commit "
                            "%(commit)s.") % values + where
        return {"number": self.numbers[name], "id": f"fig-{name}", "name": name, "wide": kind in WIDE_KINDS,
                "src": f"{href}/{base}{suffix}.png",
                # a phone's variant (figures/figure_specs.py NARROW_KINDS), shown at narrow widths
                "narrow": f"{href}/{base}{suffix}.narrow.png" if kind in NARROW_KINDS else None,
                "files": {fmt: f"{href}/{base}{suffix}.{fmt}" for fmt in ("png", "svg", "pdf")},
                "gallery": f"{self.href}/index{suffix}.html#{name}", "alt": info["alt"],
                "caption": info["caption"], "cite": cite,
                "bibtex": bibtex(f"tpu_matmul_repro_{name}", name, self.commit, note=info["caption"])}

    def many(self, names) -> list[dict]:
        return [f for f in (self(n) for n in names) if f]


def render_html(df: pd.DataFrame, *, for_pdf: bool = False, **kwargs) -> str:
    """The report's HTML page (for_pdf: the HTML its PDF is typeset from); see render_pages."""
    return render_pages(df, **kwargs)[1 if for_pdf else 0]


def render_pages(df: pd.DataFrame, *, lang: str, config_yaml: str, targets: list[str], figure_names,
                 correctness: dict, figures_href: str = "../figures",
                 primary_toolchain: str | None = None, served: dict | None = None,
                 claims: pd.DataFrame | None = None, fidelity: pd.DataFrame | None = None,
                 constants: pd.DataFrame | None = None, best_vs_xla: pd.DataFrame | None = None,
                 ablation: pd.DataFrame | None = None, study_tables: dict | None = None,
                 measured: pd.DataFrame | None = None, advice: dict | None = None,
                 timing_model=None) -> tuple[str, str]:
    """The report in `lang`: its HTML page and the HTML its PDF is typeset from, from one reading of the
    table. claims, fidelity, constants and best_vs_xla are the results/*.csv of those names (not given:
    none, best_vs_xla from `df`); `measured`: every measured row (default `df`'s); `advice`: {shape:
    the advisor's table}; `study_tables`: {name: results/<name>.csv} for the studies' sections."""
    from tpu_matmul_repro.analysis.summaries import best_vs_xla as best_table

    env, trans = environment(lang)
    # The studies' sections may read every toolchain's estimates; the rest of the report each target's
    # own compiler's: the pipeline's, or the toolchain `served` names for it.
    rows = primary_rows(df, primary_toolchain, served)
    git_shas = sorted(set(rows.git_sha.dropna())) if "git_sha" in rows else []
    commit = ", ".join(git_shas) or trans.gettext("unknown")
    advice = advice or {}
    specs = figure_specs_of(figure_names) | advice_specs(advice)
    study_tables = study_tables or {}
    inputs = sections.Inputs(
        df=df, tables={name: study_tables.get(name) for s in sections.studies() for name in s.tables},
        primary=primary_toolchain, gettext=trans.gettext, ngettext=trans.ngettext, translations=trans,
        figures=Figures(rows, specs, lang, trans.gettext, figures_href, commit, advice, timing_model).many,
        specs=specs,
        rows=rows, lang=lang, targets=tuple(targets), measured=measured, advice=advice,
        best_vs_xla=best_table(rows) if best_vs_xla is None else best_vs_xla,
        correctness=correctness, config_yaml=config_yaml, figures_href=figures_href, commit=commit)
    more = [(s, s.claims(inputs)) for s in sections.studies() if s.claims]  # under other toolchains
    more_claims = [table for _, table in more]
    model = tables.timing_model_section(trans.gettext, claims=claims, fidelity=fidelity,
                                        constants=constants, ablation=ablation, more_claims=more_claims)
    # the files the claims section's rows come from: the core's, and each study's that added rows
    model["claims_files"] = trans.gettext(", ").join(["results/claims.csv"] + [
        f"results/{s.claims_table}.csv" for s, table in more if s.claims_table
        and inputs.tables.get(s.claims_table) is not None and table is not None and len(table)])
    inputs = dataclasses.replace(inputs, model=model)
    page, appendix = sections.rendered(inputs)
    studies = {a for s in sections.studies() for a in (s.anchor, f"appendix-{s.anchor}")}
    other = "zh" if lang == "en" else "en"
    context = dict(
        lang_tag=LANGUAGE_NAMES[lang][0], other_name=LANGUAGE_NAMES[other][1],
        # The project's own stylesheets, trusted as is; everything else is autoescaped.
        css=Markup("".join((folder / name).read_text() for folder, name in [(TEMPLATES, "style.css")] + [
            (s.templates, s.style) for s in sections.studies() if s.style])),
        code_css=Markup(pygments.formatters.HtmlFormatter(cssclass="highlight").get_style_defs(".highlight")),
        date=build_date().isoformat(),  # SOURCE_DATE_EPOCH, else the commit's time: the same bytes on any day
        git_sha=commit, tpu_measured=bool(((rows.source == "measured") & (rows.target != "cpu")).any()),
        # the class words of the sentences about the numbers (estimated, modelled, ...), from the rows
        number_classes=core_sections.report_classes(rows, core_sections.main_target(targets), trans.gettext,
                                                    lang),
        # between sentences and after a label: Chinese runs on without a space and has its own colon
        sep="" if lang == "zh" else " ", colon="：" if lang == "zh" else ":",
        post_chip=POST_CHIP,  # the post's chip, named in the templates' sentences
        citation=citation(), licence=RESULTS_LICENCE, licence_url=RESULTS_LICENCE_URL, model=inputs.model,
        page=page, appendix=appendix, studies=[e for e in page if e["anchor"] in studies])
    for entry in page + appendix:  # the core's templates read their section's keys by name
        if entry["anchor"] not in studies:
            context.update({k: v for k, v in entry.items() if k not in ("anchor", "title", "body")})
    template = env.get_template("report.html.j2")
    # a number keeps its unit on its line; Chinese a space beside a number or a Latin word
    # (report/typography.py)
    spaced = space_cjk if lang == "zh" else (lambda page: page)
    return tuple(keep_units(spaced(template.render(
        **context, for_pdf=for_pdf, details_open=" open" if for_pdf else "",
        other_href=f"report.{other}.{'pdf' if for_pdf else 'html'}"))) for for_pdf in (False, True))


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
    """Embed the CJK font, subset to the page's non-ASCII characters, as a WOFF2 data URI: the HTML shows
    Chinese on any machine, offline, and carries a few hundred KB, not 16 MB."""
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
    """The user stylesheet and font configuration of the PDF: the CJK font cut down to the page's
    characters (generated text such as section numbers included)."""
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


# The run's folder as the PDF's URLs name it (checkout_independent_urls)
RUN_URL = "file:///tpu-matmul-repro-run/"


def checkout_independent_urls(base_url: str):
    """A base URL and a URL fetcher for WeasyPrint that name the page's files by their place in the run,
    not the checkout's path: WeasyPrint names each image of the PDF after its URL."""
    import weasyprint

    report = Path(base_url).resolve()
    run = report.parent.parent
    real = run.as_uri().rstrip("/") + "/"

    class RunFetcher(weasyprint.URLFetcher):
        def fetch(self, url, headers=None):
            if url.startswith(RUN_URL):
                url = real + url[len(RUN_URL):]
            return super().fetch(url, headers)

    return RUN_URL + report.relative_to(run).as_posix() + "/", RunFetcher()


def write_pdf(html: str, base_url: str, pdf_path, font_path, attachments=()) -> None:
    """Render the HTML with WeasyPrint, `attachments` (e.g. the kernels the appendix lists) embedded
    whole. The CJK font reaches it already subset: without HarfBuzz WeasyPrint walked all of the 16 MB
    font's glyphs in Python, several times per PDF."""
    import datetime

    import weasyprint

    stylesheets, fonts = pdf_stylesheets(html, font_path)
    # dated by the build, not by the clock: the same inputs give the same bytes
    when = datetime.datetime.combine(build_date(), datetime.time(), tzinfo=datetime.timezone.utc)
    files = [weasyprint.Attachment(filename=str(ROOT / path), name=path.replace("/", "_"), description=path,
                                   created=when, modified=when) for path in attachments]
    base, fetch = checkout_independent_urls(base_url)
    document = weasyprint.HTML(string=html, base_url=base, url_fetcher=fetch)
    with fonts_dated(when):
        write_atomic(pdf_path, lambda tmp: document.write_pdf(tmp, stylesheets=stylesheets, font_config=fonts,
                                                              attachments=files))


@contextlib.contextmanager
def fonts_dated(when):
    """SOURCE_DATE_EPOCH set to `when` (unless set) while the PDF is written: fontTools stamps every font
    subset with the clock otherwise."""
    if "SOURCE_DATE_EPOCH" in os.environ:
        yield
        return
    os.environ["SOURCE_DATE_EPOCH"] = str(int(when.timestamp()))
    try:
        yield
    finally:
        del os.environ["SOURCE_DATE_EPOCH"]


def listing_paths(df: pd.DataFrame) -> list[str]:
    """The kernel files the report's appendix lists (the PDF carries each as an attachment)."""
    return list(dict.fromkeys(section[-1] for section in core_sections.experiment_sections(df)))
