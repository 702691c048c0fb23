"""Snakemake script: the figure gallery (English and Chinese) and results/'s licence, attribution and
citation files."""
import _job  # noqa: F401  (first: a Ctrl-C ends the job without a traceback)

from tpu_matmul_repro.experiments.core.output_cache import cached_job


def make(log) -> None:
    from pathlib import Path

    import pandas as pd

    from tpu_matmul_repro.analysis.fitted_model import FittedModel
    from tpu_matmul_repro.analysis.runs import read_results
    from tpu_matmul_repro.experiments.core import codec
    from tpu_matmul_repro.experiments.core.atomic_write import write_text_atomic
    from tpu_matmul_repro.experiments.plan.studies import load as load_studies
    from tpu_matmul_repro.experiments.plan.toolchains import primary, served
    from tpu_matmul_repro.report.gallery import pages, results_files

    load_studies(snakemake.config["studies"])  # their kinds of figure (the catalog's captions)
    figures = codec.decode(snakemake.params.figures)
    df = read_results(snakemake.input.table)  # each target's latest measured run, no raw samples
    figures_dir = Path(snakemake.output.index).parent
    # each figure described from the rows it was drawn from: the run's own toolchain per target
    advice = {Path(path).stem: pd.read_csv(path) for path in snakemake.input.advice}
    pages_html = pages(df, figures, figures_dir, primary=primary(snakemake.config),
                       served=served(snakemake.config), advice=advice,
                       model=FittedModel.read(snakemake.input.model))
    for name, html in pages_html.items():
        write_text_atomic(html, figures_dir / name)
    results_dir = Path(snakemake.output.licence).parent
    for name, text in results_files(df).items():
        write_text_atomic(text, results_dir / name)
    log.info("wrote the gallery (%d figures) and %s", len(figures) + len(advice),
             ", ".join(results_files(df)))


# the same table, figures (by content) and citation give the same pages
cached_job(snakemake, make)
