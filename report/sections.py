"""Report sections that studies add (studies/README.md).

A study's package registers its `Section` when imported (experiments/plan/studies.py loads the run's
studies). The report places each one after the timing model, in the order registered, with a line in
the contents (and one for its appendix), its sentences in the abstract and its findings in the key
findings box, each linked to the section; its templates and Python messages are extracted and checked
with every other (experiments/core/i18n.py: EXTRACT takes studies/ whole), so a missing translation
stops the build like any other.
"""
import dataclasses
from pathlib import Path
from typing import Callable

import pandas as pd


@dataclasses.dataclass(frozen=True)
class Inputs:
    """What a section's context is made from."""

    df: pd.DataFrame  # the run's table, every toolchain's estimates (the core reads its own compiler's)
    tables: dict  # {name: the results/<name>.csv of Section.tables, None when not given}
    primary: str | None  # the pipeline's own toolchain
    gettext: Callable[[str], str]
    figures: Callable  # names -> the report's figure entries, numbered (report/build.py: Figures.many)
    specs: dict  # {name: (kind, args)}: the run's figures
    # a sentence with a count: ngettext(singular, plural, n), the language's plural form
    ngettext: Callable[[str, str, int], str] = lambda singular, plural, n: singular if n == 1 else plural


@dataclasses.dataclass(frozen=True)
class Section:
    anchor: str  # its id in the page, e.g. "then-and-now"
    title: str  # its heading and its line in the contents: an N_() message
    templates: Path  # the study's folder of Jinja templates
    body: str  # the template of the section; it reads the context as `section`
    # (Inputs) -> the template's context; its keys "abstract" and "findings" (lists of sentences) go to
    # the first page, "appendix" (bool) places the appendix
    context: Callable[[Inputs], dict]
    tables: tuple[str, ...] = ()  # the results/<name>.csv it reads: inputs of the report rule by name
    appendix: str | None = None  # the template of its appendix
    appendix_title: str | None = None  # an N_() message


REGISTRY: dict[str, Section] = {}


def register(section: Section) -> None:
    if REGISTRY.get(section.anchor, section) != section:
        raise ValueError(f"report section anchor={section.anchor!r} is registered twice, differently")
    REGISTRY[section.anchor] = section


def rendered(inputs: Inputs) -> list[dict]:
    """Each registered section with its context, in the order registered, for the template."""
    out = []
    for s in REGISTRY.values():
        context = {"abstract": [], "findings": [], "appendix": s.appendix is not None, **s.context(inputs)}
        out.append(dict(context, anchor=s.anchor, title=inputs.gettext(s.title), body=s.body,
                        appendix_template=s.appendix if context["appendix"] else None,
                        appendix_title=inputs.gettext(s.appendix_title) if s.appendix_title else ""))
    return out
