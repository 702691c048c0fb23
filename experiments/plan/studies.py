"""The optional studies as the core meets them: by the names in the config's `studies` list, each
loaded by name so it registers its figures and report sections (studies/README.md).
"""
import importlib
import importlib.util

from tpu_matmul_repro.experiments.plan.config import study_names

PLUGIN_MODULES = ("specs", "figure", "section")  # a study's modules that register themselves when loaded


def load(names, modules=PLUGIN_MODULES) -> list:
    """Import the studies `names` and those of their `modules` that they have; returns the packages."""
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
