"""Which figures a configuration yields, under stable names, and how to draw each one."""
from pathlib import Path

from experiments.analysis.summaries import latest_runs
from experiments.analysis.toolchains import primary_rows
from experiments.plan.toolchains import parse as parse_toolchains
from figures import plots
from figures.then_and_now import plot_then_and_now
from figures.style import LANGUAGES, save, use_style

KINDS = {
    "experiment": plots.plot_experiment,
    "vmem": plots.plot_vmem,
    "roofline": plots.plot_roofline,
    "search": plots.plot_search,
    "fidelity": plots.plot_fidelity,
    "generations": plots.plot_generations,
    "then_and_now": plot_then_and_now,  # every toolchain's estimates; the other kinds: the pipeline's only
}
PUBLISHED_TARGETS = ("v5e",)  # the post's numbers are for TPU v5e


def figure_specs(config: dict, targets=None) -> dict[str, tuple[str, dict]]:
    """name -> (kind, arguments) for every figure of a configuration, e.g. v5_bfloat16_v5e.

    `targets` defaults to the config's; the workflow adds the TPU generations measured or imported.
    """
    targets = list(targets or config["targets"])
    experiments = config["compile_study"]["experiments"]
    specs = {}
    for target in targets:
        for name, spec in experiments.items():
            for dtype in spec["dtypes"]:
                specs[f"{name}_{dtype}_{target}"] = ("experiment", dict(experiment=name, dtype=dtype, target=target))
                if "search" in spec:
                    specs[f"search_{name}_{dtype}_{target}"] = (
                        "search", dict(experiment=name, dtype=dtype, target=target))
        specs[f"vmem_{target}"] = ("vmem", dict(target=target))
        specs[f"roofline_{target}"] = ("roofline", dict(target=target))
        if target in PUBLISHED_TARGETS:
            specs[f"fidelity_{target}"] = ("fidelity", dict(target=target))
    toolchains = parse_toolchains(config)
    if len(toolchains) > 1:  # the post's configurations under each toolchain
        primary = next(t.name for t in toolchains.values() if t.pipeline)
        specs["then_and_now_v5e"] = ("then_and_now", dict(target="v5e", primary=primary))
    if len(targets) > 1:
        for name, spec in experiments.items():
            for dtype in spec["dtypes"]:
                specs[f"generations_{name}_{dtype}"] = ("generations", dict(experiment=name, dtype=dtype))
    return specs


def stem(directory, name: str, lang: str) -> Path:
    """English figures keep the plain name (v5_bfloat16_v5e.png); others add the language."""
    return Path(directory) / (name if lang == "en" else f"{name}.{lang}")


def render(df, name: str, kind: str, args: dict, directory, primary: str | None = None) -> list[Path]:
    """Draw one figure in every language and format (`primary`: the pipeline's own toolchain, whose
    estimates all kinds but then_and_now draw; None: every row)."""
    if kind != "then_and_now":
        df = primary_rows(df, primary)
    df = latest_runs(df)  # one measured curve per configuration: each target's latest run
    paths = []
    for lang in LANGUAGES:
        use_style(lang)
        paths += save(KINDS[kind](df, lang=lang, **args), stem(directory, name, lang))
    return paths
