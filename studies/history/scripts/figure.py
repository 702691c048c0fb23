"""Snakemake script: the history figure (studies/history/figure.py), in English and Chinese: PNG, SVG, PDF."""
import warnings
from pathlib import Path

import pandas as pd

from tpu_matmul_repro.experiments.core.runtime import logged
from tpu_matmul_repro.figures.catalog import figure_title
from tpu_matmul_repro.figures.figure_specs import LANGUAGES, stem
from tpu_matmul_repro.figures.style import save, use_style
from tpu_matmul_repro.studies.history import releases
from tpu_matmul_repro.studies.history.figure import plot_history, provenance

with logged(snakemake.log[0]) as log:
    vmem = pd.read_csv(snakemake.input.vmem)
    first_change = pd.read_csv(snakemake.input.first_change)
    listed = releases.read(snakemake.input.releases)
    directory = Path(snakemake.output[0]).parent
    with warnings.catch_warnings():
        # A missing glyph would print boxes in a published figure: make it an error.
        warnings.filterwarnings("error", message=".*[Gg]lyph.*missing.*")
        for lang in LANGUAGES:
            use_style(lang)
            fig = plot_history(vmem, first_change, listed, lang)
            paths = save(fig, stem(directory, "history_vmem", lang),
                         provenance(vmem, listed, lang, figure_title(fig)))
            log.info("wrote %s", ", ".join(str(p) for p in paths))
