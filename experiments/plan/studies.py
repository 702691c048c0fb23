"""The optional studies (studies/<name>/, studies/README.md) as the core meets them: by the names in the
config's `studies` list, never by an import of its own (tests/test_structure.py checks).

Importing a study's package registers what it adds to the core: kinds of figure
(figures.catalog.register) and report sections (report.sections.register). Each process that draws
figures or builds the report loads the run's studies first.
"""
import importlib

from experiments.plan.config import study_names


def load(names) -> list:
    """Import the studies `names` (their packages register themselves); returns the modules."""
    known = study_names()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"studies={list(names)!r}: {unknown[0]!r} is not a study "
                         f"(studies/*/rules.smk: {known})")
    return [importlib.import_module(f"studies.{name}") for name in names]


def load_all() -> list:
    """Every study: what the translation check and the docs need, whichever a run switches on."""
    return load(study_names())
