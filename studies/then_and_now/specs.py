"""The figure a config yields of this study: the post's chip under every toolchain, when the config has
more than one (registered with figures.figure_specs, what planning reads; figure.py draws it)."""
from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.experiments.plan.toolchains import parse as parse_toolchains
from tpu_matmul_repro.figures.figure_specs import register


def figure_specs(config: dict, targets) -> dict:
    toolchains = parse_toolchains(config)
    if len(toolchains) < 2:
        return {}
    primary = next(t.name for t in toolchains.values() if t.pipeline)
    return {"then_and_now_v5e": ("then_and_now", dict(target=POST_CHIP, primary=primary))}


register("then_and_now", figure_specs, narrow=True)
