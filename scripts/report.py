"""Snakemake script: the report in one language (the wildcard `lang`), as HTML and PDF."""
import _job  # noqa: F401  (first: a Ctrl-C ends the job without a traceback)

from tpu_matmul_repro.experiments.core.output_cache import cached_job
from tpu_matmul_repro.experiments.core.provenance import build_date


def read_csv(path):
    """A summary table; an empty one (a run too small to fit the timing model) as an empty frame."""
    import pandas as pd

    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def make(log) -> None:
    from pathlib import Path

    import pandas as pd

    from tpu_matmul_repro.analysis.fitted_model import FittedModel
    from tpu_matmul_repro.analysis.runs import read_measured, read_results
    from tpu_matmul_repro.experiments.core import codec
    from tpu_matmul_repro.experiments.core.atomic_write import write_text_atomic
    from tpu_matmul_repro.experiments.plan.studies import load as load_studies
    from tpu_matmul_repro.experiments.plan.toolchains import primary, served
    from tpu_matmul_repro.figures.style import cjk_font_path
    from tpu_matmul_repro.report.build import (
        config_text,
        embed_cjk_font,
        listing_paths,
        render_pages,
        write_pdf,
    )

    load_studies(snakemake.config["studies"])  # their report sections (report/sections.py)
    df = read_results(snakemake.input.table)  # each target's latest measured run, no raw samples
    measured = read_measured(snakemake.input.table)  # every measured row: the measurements section
    checks = pd.read_parquet(snakemake.input.correctness)
    correctness = {"passed": int(checks.passed.sum()), "total": len(checks)}
    config_yaml = config_text(dict(snakemake.config))
    model = {name: read_csv(getattr(snakemake.input, name))
             for name in ("claims", "fidelity", "constants", "ablation", "best_vs_xla")}
    study_tables = {name: read_csv(getattr(snakemake.input, name)) for name in snakemake.params.study_tables}
    advice = {Path(path).stem: pd.read_csv(path) for path in snakemake.input.advice}
    figures_href = Path("..") / Path(snakemake.input.figures[0]).parent.name
    lang, html_path = snakemake.wildcards.lang, Path(snakemake.output.html)
    common = dict(lang=lang, config_yaml=config_yaml, targets=snakemake.params.targets,
                  figure_names=codec.decode(snakemake.params.figures), correctness=correctness,
                  figures_href=str(figures_href), primary_toolchain=primary(snakemake.config),
                  served=served(snakemake.config), measured=measured, advice=advice,
                  study_tables=study_tables, timing_model=FittedModel.read(snakemake.input.model), **model)
    html, pdf_html = render_pages(df, **common)
    write_text_atomic(embed_cjk_font(html, cjk_font_path()), html_path)
    write_pdf(pdf_html, base_url=str(html_path.parent.resolve()) + "/",
              pdf_path=Path(snakemake.output.pdf), font_path=cjk_font_path(), attachments=listing_paths(df))
    log.info("wrote report.%s.html and report.%s.pdf", lang, lang)


# the same table, figures, summaries and date typeset the same report
cached_job(snakemake, make, extra=lambda: {"date": build_date().isoformat()})
