"""Snakemake script: one figure, in English and Chinese, as PNG, SVG and PDF."""
import _repo  # noqa: F401  (puts the repository root on sys.path)

from experiments.core.output_cache import reuse_or_make
from experiments.core.runtime import logged


def make(log) -> None:
    import warnings
    from pathlib import Path

    from experiments.analysis.runs import read_results
    from experiments.core import codec
    from experiments.plan.toolchains import primary, served
    from figures.catalog import render

    kind, args = codec.decode(snakemake.params.spec)
    df = read_results(snakemake.input[0])  # each target's latest measured run, no raw samples
    with warnings.catch_warnings():
        # A missing glyph would print boxes in a published figure: make it an error.
        warnings.filterwarnings("error", message=".*[Gg]lyph.*missing.*")
        paths = render(df, snakemake.wildcards.name, kind, args, Path(snakemake.output[0]).parent,
                       primary=primary(snakemake.config), served=served(snakemake.config))
    log.info("wrote %s", ", ".join(str(p) for p in paths))


with logged(snakemake.log[0]) as log:
    reuse_or_make(snakemake, lambda: make(log), log)  # the same table draws the same bytes
