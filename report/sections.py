"""The report's sections: one registry for the core's (report/core_sections.py, in the page's order)
and the studies' (placed after the section their `after` names; studies/README.md). Each is a
template and a function from the run's `Inputs` to its context (None: left out of this report)."""
import dataclasses
from pathlib import Path
from typing import Callable

import pandas as pd

STUDY_APPENDICES_AFTER = "appendix-raised"


@dataclasses.dataclass(frozen=True)
class Inputs:
    """What a section's context is made from: the run's table and result files, read once."""

    df: pd.DataFrame  # the run's table, every toolchain's estimates (the core reads `rows`)
    tables: dict  # {name: the results/<name>.csv of Section.tables, None when not given}
    primary: str | None  # the pipeline's own toolchain
    gettext: Callable[[str], str]
    figures: Callable  # names -> the report's figure entries, numbered (report/build.py: Figures.many)
    specs: dict  # {name: (kind, args)}: the run's figures
    # a sentence with a count: ngettext(singular, plural, n), the language's plural form
    ngettext: Callable[[str, str, int], str] = lambda singular, plural, n: singular if n == 1 else plural
    # What the core's sections read besides (report/build.py: render_pages gives each):
    rows: pd.DataFrame | None = None  # each target's own compiler's rows of `df`
    lang: str = "en"
    targets: tuple = ()
    model: dict | None = None  # the timing model's tables (report/tables.py: timing_model_section)
    best_vs_xla: pd.DataFrame | None = None
    measured: pd.DataFrame | None = None  # every measured row
    advice: dict | None = None  # {shape: the advisor's table}
    correctness: dict | None = None  # {"passed", "total"}
    translations: object = None  # the language's babel Translations (its plural forms and contexts)
    config_yaml: str = ""
    figures_href: str = "../figures"
    commit: str = ""
    # the kernel files the sections link to, listed in the appendix in the order first linked
    listings: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Section:
    anchor: str  # its id in the page, e.g. "best"
    title: str | None  # its heading and its line in the contents: an N_() message (None: no line)
    templates: Path  # the folder of its Jinja templates
    body: str  # the template of the section
    # (Inputs) -> the template's context, or None to leave the section out; a "title" key replaces the
    # title (the core's titles with a number in them); a study's keys "abstract" and "findings" (lists of
    # sentences) go to the first page, "appendix" (bool) places the appendix
    context: Callable[[Inputs], dict | None]
    tables: tuple[str, ...] = ()  # the results/<name>.csv it reads: inputs of the report rule by name
    appendix: str | None = None  # the template of its appendix
    appendix_title: str | None = None  # an N_() message
    after: str | None = "timing-model"  # the section it follows; None: the core's, in registered order
    part: str = "main"  # "main", or "appendix" for the core's appendix sections
    style: str | None = None  # a style sheet in `templates`, added after the report's own
    # (Inputs) -> more rows of claims.csv's columns, the post's claims checked under other toolchains: the
    # claims section lists them after the core's, and the key findings give each of those toolchains a
    # column of its verdicts beside this run's (report/front.py)
    claims: Callable[[Inputs], pd.DataFrame] | None = None
    claims_table: str | None = None  # of `tables`, the one those rows are read from (named in the report)


REGISTRY: dict[str, Section] = {}
STUDY_APPENDIX = "sections/appendix/study.j2"  # a study's appendix: its heading, then its template


def register(section: Section) -> None:
    if REGISTRY.get(section.anchor, section) != section:
        raise ValueError(f"report section anchor={section.anchor!r} is registered twice, differently")
    REGISTRY[section.anchor] = section


def studies() -> list[Section]:
    return [s for s in REGISTRY.values() if s.after is not None]


def placed(core: list[str], studies_after: list[tuple[str, str]]) -> list[str]:
    """The anchors of the core's sections (all registered, in order) with each study's after the anchor it
    names (after the studies placed there before it; last, if no section has that anchor)."""
    out, mine = list(core), set()
    for anchor, after in studies_after:
        at = out.index(after) + 1 if after in out else len(out)
        while at < len(out) and out[at] in mine:
            at += 1
        out.insert(at, anchor)
        mine.add(anchor)
    return out


def entry(section: Section, context: dict, gettext) -> dict:
    title = context.pop("title", gettext(section.title) if section.title else None)
    return dict(context, anchor=section.anchor, title=title, body=section.body)


def rendered(inputs: Inputs) -> tuple[list[dict], list[dict]]:
    """The page's sections and the appendix's, in their order, each with its context: the template's
    `page` and `appendix`. A section whose context is None is left out. The core's contexts are made in
    the order registered (the appendix's listing of kernels is filled by the sections before it)."""
    entries = {}
    for s in REGISTRY.values():
        if s.after is None:
            context = s.context(inputs)
            if context is not None:
                entries[s.anchor] = entry(s, context, inputs.gettext)
    for s in studies():
        made = s.context(inputs)
        if made is None:  # as the core's: nothing to say in this run
            continue
        context = {"abstract": [], "findings": [], "appendix": s.appendix is not None, **made}
        appendix = s.appendix if context["appendix"] else None
        context |= dict(appendix_template=appendix,
                        appendix_title=inputs.gettext(s.appendix_title) if s.appendix_title else "")
        entries[s.anchor] = entry(s, dict(context), inputs.gettext)
        if appendix:
            entries[f"appendix-{s.anchor}"] = dict(context, anchor=f"appendix-{s.anchor}",
                                                   body=STUDY_APPENDIX, title=context["appendix_title"])

    def core(part):
        return [s.anchor for s in REGISTRY.values() if s.after is None and s.part == part]

    page = placed(core("main"), [(s.anchor, s.after) for s in studies()])
    appendix = placed(core("appendix"), [(f"appendix-{s.anchor}", STUDY_APPENDICES_AFTER) for s in studies()])
    return [entries[a] for a in page if a in entries], [entries[a] for a in appendix if a in entries]
