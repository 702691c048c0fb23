"""Which figures a configuration yields, under stable names (e.g. v5_bfloat16_v5e), and their files'
names: what the workflow plans with, without the drawing code; a study adds its own with `register`."""
from pathlib import Path
from typing import Callable

from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.experiments.plan.search_scope import search_covers

FORMATS = ("png", "svg", "pdf")
LANGUAGE_NAMES = {"en": ("en", "English"), "zh": ("zh-Hans", "简体中文")}  # code -> (HTML lang, name)
LANGUAGES = tuple(LANGUAGE_NAMES)
CORE_KINDS = ("experiment", "search", "vmem", "roofline", "fidelity", "generations")
# Kinds drawn a second time for a phone (figures/plots.py NARROW_INCHES wide, the legend in one
# column): <stem>.narrow.png, which the HTML report and the gallery show at narrow widths. A study's kind
# joins with register(..., narrow=True): one list, which every importer of the name sees grow.
NARROW_KINDS = ["experiment", "generations", "advice", "roofline", "fidelity", "vmem", "search"]
# A study's kind -> the figures a config yields of it: (config, targets) -> {name: (kind, args)}.
STUDY_SPECS: dict[str, Callable[[dict, list], dict]] = {}


def register(kind: str, specs: Callable[[dict, list], dict], narrow: bool = False) -> None:
    """Add a study's kind of figure to what configs yield; `narrow`: it draws a phone's variant too."""
    if kind in CORE_KINDS or STUDY_SPECS.get(kind, specs) is not specs:
        raise ValueError(f"figure kind={kind!r} is registered twice, differently")
    STUDY_SPECS[kind] = specs
    if narrow and kind not in NARROW_KINDS:
        NARROW_KINDS.append(kind)


def figure_specs(config: dict, targets=None) -> dict[str, tuple[str, dict]]:
    """name -> (kind, arguments) for every figure of a configuration; `targets` defaults to the config's."""
    targets = list(targets or config["targets"])
    experiments = config["compile_study"]["experiments"]
    specs = {}
    for target in targets:
        for name, spec in experiments.items():
            for dtype in spec["dtypes"]:
                specs[f"{name}_{dtype}_{target}"] = (
                    "experiment", dict(experiment=name, dtype=dtype, target=target))
                if search_covers(spec, dtype, target):
                    specs[f"search_{name}_{dtype}_{target}"] = (
                        "search", dict(experiment=name, dtype=dtype, target=target))
        specs[f"vmem_{target}"] = ("vmem", dict(target=target))
        specs[f"roofline_{target}"] = ("roofline", dict(target=target))
        if target == POST_CHIP:  # the post's numbers are for its chip alone
            specs[f"fidelity_{target}"] = ("fidelity", dict(target=target))
    if len(targets) > 1:
        for name, spec in experiments.items():
            for dtype in spec["dtypes"]:
                specs[f"generations_{name}_{dtype}"] = ("generations", dict(experiment=name, dtype=dtype))
    for study_specs in STUDY_SPECS.values():
        specs.update(study_specs(config, targets))
    return specs


def advice_specs(shapes) -> dict[str, tuple[str, dict]]:
    """name -> (kind, arguments) of the advice figures of the layer shapes ("8192x4096x14336")."""
    return {f"advice_{shape}": ("advice", {"shape": shape}) for shape in shapes}


def stem(directory, name: str, lang: str) -> Path:
    """English figures keep the plain name (v5_bfloat16_v5e.png); others add the language."""
    return Path(directory) / (name if lang == "en" else f"{name}.{lang}")


def narrow_stem(directory, name: str, lang: str) -> Path:
    """The phone's variant of a figure (NARROW_KINDS): v5_bfloat16_v5e.narrow, v5_bfloat16_v5e.zh.narrow."""
    plain = stem(directory, name, lang)
    return plain.with_name(f"{plain.name}.narrow")


def spec_from_name(name: str) -> tuple[str, dict]:
    """(kind, arguments) of a core figure from its stable name, e.g. search_v5_bfloat16_v5e."""
    parts = name.split("_")
    if parts[0] in ("vmem", "roofline", "fidelity") and len(parts) == 2:
        return parts[0], {"target": parts[1]}
    if parts[0] == "search" and len(parts) == 4:
        return "search", dict(experiment=parts[1], dtype=parts[2], target=parts[3])
    if parts[0] == "generations" and len(parts) == 3:
        return "generations", dict(experiment=parts[1], dtype=parts[2])
    if len(parts) == 3:
        return "experiment", dict(experiment=parts[0], dtype=parts[1], target=parts[2])
    raise ValueError(f"figure name={name!r} matches no kind of figure in {list(CORE_KINDS)}")


def figure_specs_of(figures) -> dict[str, tuple[str, dict]]:
    """{name: (kind, args)} from such a dict, or from figure names alone."""
    if isinstance(figures, dict):
        return {name: (kind, dict(args)) for name, (kind, args) in figures.items()}
    return {name: spec_from_name(name) for name in sorted(figures)}
