"""Snakemake script: one figure, in English and Chinese, as PNG, SVG and PDF."""
import warnings
from pathlib import Path

import _repo  # noqa: F401  (puts the repository root on sys.path)

from experiments.analysis.runs import read_results
from experiments.core import codec
from experiments.core.runtime import logged
from experiments.plan.toolchains import primary, served
from figures.catalog import render

with logged(snakemake.log[0]) as log:
    kind, args = codec.decode(snakemake.params.spec)
    df = read_results(snakemake.input[0])  # each target's latest measured run, no raw samples
    with warnings.catch_warnings():
        # A missing glyph would print boxes in a published figure: make it an error.
        warnings.filterwarnings("error", message=".*[Gg]lyph.*missing.*")
        paths = render(df, snakemake.wildcards.name, kind, args, Path(snakemake.output[0]).parent,
                       primary=primary(snakemake.config), served=served(snakemake.config))
    log.info("wrote %s", ", ".join(str(p) for p in paths))
