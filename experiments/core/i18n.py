"""The one translation system for every text the project shows: English in the code, one gettext catalog
per other language and per study (docs/development.md, "Either way, one translation system").
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
    """A babel extractor (EXTRACT): each kernel's `description` (kernels/__init__.py), which figure titles
    and report headings show; kernels/ marks nothing (it imports no layer above)."""
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
    """The messages one catalog holds: the core's (study None), or a study's that the core does not mark."""
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
    """The checked translations for `lang` (English: the identity), core's and studies' merged."""
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
