"""Snakemake script: every figure, in English and Chinese, as PNG, SVG and PDF (figures/batch.py)."""
import _job  # noqa: F401  (first: a Ctrl-C ends the job without a traceback)

from tpu_matmul_repro.experiments.core.output_cache import cached_job


def make(log) -> None:
    from pathlib import Path

    from tpu_matmul_repro.analysis.fitted_model import FittedModel
    from tpu_matmul_repro.experiments.core import codec
    from tpu_matmul_repro.experiments.plan.toolchains import primary, served
    from tpu_matmul_repro.figures.batch import render_all

    specs = codec.decode(snakemake.params.figures)
    paths = render_all(snakemake.input.table, specs, Path(snakemake.output[0]).parent,
                       primary=primary(snakemake.config), served=served(snakemake.config),
                       processes=snakemake.threads, log_path=snakemake.log[0],
                       studies=snakemake.config["studies"], model=FittedModel.read(snakemake.input.model))
    log.info("wrote %d figures in %d process(es): %d files", len(specs), snakemake.threads, len(paths))


# Not in the worker processes figures/batch.py spawns: they import this file again, by the path
# Snakemake gives it (a workflow run from a remote source would need figures drawn in one process).
if __name__ == "__main__":
    cached_job(snakemake, make)  # the same table draws the same bytes
