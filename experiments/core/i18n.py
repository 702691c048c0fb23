"""The one translation system for every text the project shows (figures, report, gallery, studies).

English is the source language, written in the code and marked for extraction; each other language is
one gettext catalog, locale/<lang>/LC_MESSAGES/messages.po, beside its glossary (glossary.yaml), plus
one per study that marks messages of its own, in the study's folder
(studies/<name>/locale/<lang>/LC_MESSAGES/messages.po), so that a study carries its translations
with it. A study's catalog holds the messages marked in its folder that the core does not mark; the
translations are the core's and the studies' merged. It lives
in the core, below figures and report, so that both (and analysis/claims.py) read one catalog
and no lower layer imports a higher one.

Marking a message where it is written:
- figures, gallery, studies: `N_("… %(n)s …")` (a module constant or a table of labels), shown with
  `translate(lang, message, n=3)`; `NC_(context, "…")` where one English string needs another
  translation here than elsewhere (pgettext);
- report: `gettext("…")`, `_("…")` in its code and templates (Jinja's i18n extension), `N_` for tables;
  a sentence with a count in it, `ngettext("%(num)s claim differs", "%(num)s claims differ", n)` (the
  catalog holds the pair, Chinese one form).
- kernels: each kernel's `description` (read by `spec_descriptions`: the kernels import nothing above).
Placeholders are %-format with names, `%(n)s`, `%(x).1f`, a literal % is `%%` (as Jinja's newstyle
gettext requires), so every message follows one convention, which babel checks (python-format).
Only literals are extracted: `translate(lang, TEXT["key"])` marks nothing, and a literal inside a
marking call (`gettext(NAMES["key"])`) would be taken for a message (the catalog test then fails).

`used_messages` reads the marks from the files EXTRACT names, and each study's from STUDY_EXTRACT under
its folder; each catalog must hold exactly its own (`scope_messages`): a missing or empty translation
is refused (CatalogError), and tools/po_update.py adds translations, drops the unused and moves a
message to the catalog of the scope that marks it.
"""
import ast
import functools
import io
from pathlib import Path

import yaml
from babel.messages import mofile, pofile
from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_file
from babel.support import Translations

ROOT = Path(__file__).resolve().parents[2]
LOCALE = ROOT / "locale"
JINJA = "jinja2.ext:babel_extract"
# Where messages are marked: (babel's extraction method, a glob under the repository root).
EXTRACT = (
    ("tpu_matmul_repro.experiments.core.i18n:spec_descriptions", "kernels/*.py"),
    ("python", "analysis/claims.py"),
    ("python", "figures/*.py"),
    ("python", "report/*.py"),
    (JINJA, "report/templates/**/*.j2"),
)
STUDIES = ROOT / "studies"
STUDY_EXTRACT = (("python", "**/*.py"), (JINJA, "**/*.j2"))  # under studies/<name>/
KEYWORDS = {"_": None, "N_": None, "gettext": None, "pgettext": ((1, "c"), 2), "NC_": ((1, "c"), 2),
            "ngettext": (1, 2)}


class CatalogError(ValueError):
    """A translation catalog misses or leaves empty a message the code uses."""


def N_(message: str) -> str:
    """Marks a message for extraction; translated where it is used."""
    return message


def NC_(context: str, message: str) -> tuple[str, str]:
    """Marks a message with its context (pgettext) for extraction; translated where it is used."""
    return context, message


def spec_descriptions(fileobj, keywords, comment_tags, options):
    """A babel extractor (EXTRACT): the `description` of each kernel's facts (kernels/__init__.py), which
    figure titles and report headings show in each language; kernels/ marks nothing (it imports no layer
    above)."""
    for node in ast.walk(ast.parse(fileobj.read())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "KernelFacts":
            for keyword in node.keywords:
                if keyword.arg == "description" and isinstance(keyword.value, ast.Constant):
                    yield keyword.value.lineno, None, [keyword.value.value], []


def catalog_path(lang: str, study: str | None = None) -> Path:
    """The core's catalog for `lang`, or the study's."""
    return (LOCALE if study is None else STUDIES / study / "locale") / lang / "LC_MESSAGES" / "messages.po"


def read_catalog(lang: str, study: str | None = None) -> Catalog:
    """A catalog as written, unchecked (for tools and tests); an empty one where the file is absent."""
    path = catalog_path(lang, study)
    if not path.exists():
        return Catalog(locale=lang.replace("-", "_"))
    with open(path, "rb") as f:
        return pofile.read_po(f, locale=lang.replace("-", "_"))


@functools.cache
def _marked(method: str, pattern: str) -> frozenset[tuple[str, str | None]]:
    options = {"extensions": "jinja2.ext.i18n"} if method == JINJA else {}
    found = set()
    for path in sorted(ROOT.glob(pattern)):
        for _lineno, message, _comments, context in extract_from_file(
                method, str(path), keywords=KEYWORDS, options=options):
            # a plural message (ngettext) is its (singular, plural) pair, as a catalog holds its id
            plural = isinstance(message, tuple) and len(message) == 2 and all(message)
            found.add((message if isinstance(message, str) or plural else message[0], context))
    return frozenset(found)


def _patterns() -> list[tuple[str, str]]:
    return [*EXTRACT, *((method, f"studies/{name}/{pattern}") for name in studies()
                        for method, pattern in STUDY_EXTRACT)]


def studies() -> list[str]:
    """The study folders (studies/<name>/ with an __init__.py)."""
    return sorted(p.parent.name for p in STUDIES.glob("*/__init__.py"))


def used_messages(under: tuple[str, ...] = ("",)) -> frozenset[tuple[str, str | None]]:
    """(message, context) of every message marked in the core's files and the studies' (those whose
    pattern starts with one of `under`, e.g. ("figures/", "studies/") for the words a figure can draw)."""
    return frozenset().union(*(_marked(method, pattern) for method, pattern in _patterns()
                               if pattern.startswith(under)))


def scope_messages(study: str | None = None) -> frozenset[tuple[str, str | None]]:
    """The messages one catalog holds: the core's marks (study None), or those a study marks in its
    folder that the core does not."""
    core = frozenset().union(*(_marked(method, pattern) for method, pattern in EXTRACT))
    if study is None:
        return core
    return frozenset().union(*(_marked(method, f"studies/{study}/{pattern}")
                               for method, pattern in STUDY_EXTRACT)) - core


def scopes() -> list[str | None]:
    """Every catalog's scope: the core (None), then each study that marks messages of its own."""
    return [None, *(name for name in studies() if scope_messages(name))]


def translated(string) -> bool:
    """Whether a catalog's msgstr is filled: a plural message's every form."""
    return all(string) if isinstance(string, tuple) else bool(string)


def _checked_catalog(lang: str, study: str | None) -> Catalog:
    path = catalog_path(lang, study)
    need = scope_messages(study)
    if not path.exists():
        raise CatalogError(f"{path}: no such catalog, and {len(need)} messages need one, e.g. "
                           f"{sorted(i for i, _ in need)[:3]}")
    catalog = read_catalog(lang, study)
    have = {(m.id, m.context): m.string for m in catalog if m.id}
    missing = sorted(f"{c}|{i}" if c else str(i) for i, c in need if not translated(have.get((i, c))))
    if missing:
        raise CatalogError(f"{path}: {len(missing)} messages missing or untranslated, e.g. {missing[:3]}")
    return catalog


@functools.cache
def _checked(lang: str, _versions: tuple) -> Translations:
    merged = None
    for study in scopes():
        buffer = io.BytesIO()
        mofile.write_mo(buffer, _checked_catalog(lang, study))
        buffer.seek(0)
        part = Translations(buffer)
        merged = part if merged is None else merged.merge(part)
    return merged


def translations(lang: str) -> Translations:
    """The checked translations for `lang` (English: the identity), the core's and every study's
    merged; read again when a catalog changes."""
    if lang == "en":
        return Translations()
    paths = [catalog_path(lang, study) for study in scopes()]
    return _checked(lang, tuple((str(p), p.stat().st_mtime_ns if p.exists() else 0) for p in paths))


def translate(lang: str, message: str | tuple[str, str], **values) -> str:
    """`message` (a string, or NC_'s (context, string)) in `lang`, its placeholders filled from `values`."""
    trans = translations(lang)
    if isinstance(message, tuple):
        return trans.pgettext(*message) % values
    return trans.gettext(message) % values


@functools.cache
def glossary(lang: str = "zh") -> tuple[tuple[tuple[str, str], ...], dict[str, str]]:
    """The fixed terms of a language's translation, (English, translation) in order, and the variants to
    avoid ({regular expression: the term to use instead})."""
    data = yaml.safe_load((LOCALE / lang / "glossary.yaml").read_text(encoding="utf-8"))
    return tuple((en, term) for en, term in data["terms"]), dict(data["avoid"])
