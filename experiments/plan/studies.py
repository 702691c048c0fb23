"""The optional studies (studies/<name>/, studies/README.md) as the core meets them: by the names in the
config's `studies` list, never by an import of its own (tests/test_structure.py checks).

Loading a study imports its package and, where it has them, its modules `specs`, `figure` and `section`,
which register what the study adds to the core: the figures a config yields of its kinds
(figures.figure_specs.register: what planning needs), how to draw them (figures.catalog.register) and report
sections (report.sections.register). Each process that draws figures or builds the report loads the
run's studies first. Nothing imports those modules statically, so a study's own scripts (its table)
do not depend on its figure or section code (rules/common.smk: study_modules).
"""
import importlib
import importlib.util

from tpu_matmul_repro.experiments.plan.config import study_names

PLUGIN_MODULES = ("specs", "figure", "section")  # a study's modules that register themselves when loaded


def load(names, modules=PLUGIN_MODULES) -> list:
    """Import the studies `names` and those of their modules (all: what drawing and the report need;
    ("specs",): what planning needs); returns the packages."""
    known = study_names()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"studies={list(names)!r}: {unknown[0]!r} is not a study "
                         f"(studies/*/rules.smk: {known})")
    packages = []
    for name in names:
        package = importlib.import_module(f"tpu_matmul_repro.studies.{name}")
        for module in modules:
            if importlib.util.find_spec(f"{package.__name__}.{module}") is not None:
                importlib.import_module(f"{package.__name__}.{module}")
        packages.append(package)
    return packages


def load_all() -> list:
    """Every study: what the translation check and the docs need, whichever a run switches on."""
    return load(study_names())
