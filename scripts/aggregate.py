"""Snakemake script: the tidy table results/matmul.parquet and the run's one fit of the timing model,
results/timing_model.json."""
import _job  # noqa: F401  (first: a Ctrl-C ends the job without a traceback)

from tpu_matmul_repro.experiments.core.output_cache import cached_job


def make(log) -> None:
    import pandas as pd

    from tpu_matmul_repro.analysis import model_columns
    from tpu_matmul_repro.analysis.aggregate import (
        check_unique,
        combine,
        load_measured,
        load_published,
    )
    from tpu_matmul_repro.analysis.fitted_model import constants_table
    from tpu_matmul_repro.analysis.runs import ROW_GROUP_ROWS
    from tpu_matmul_repro.experiments.core.atomic_write import write_parquet_atomic
    from tpu_matmul_repro.experiments.plan.toolchains import primary, served

    estimates = [pd.read_parquet(p) for p in snakemake.input.estimates]
    measured = load_measured(snakemake.input.measured)
    log.info("%d measured rows from %s", len(measured), list(snakemake.input.measured) or "no file")
    # each target's estimates from its own compiler: the pipeline's, or the toolchain serving it
    compilers = dict(toolchain=primary(snakemake.config), served=served(snakemake.config))
    df = combine(estimates, load_published(snakemake.input.published), measured, **compilers)
    check_unique(df)
    # the timing model's columns: device time and time as the post measured it (one blocked call)
    df, model = model_columns.apply(df, **compilers)
    log.info("timing model constants:\n%s", constants_table(model).to_string())
    log.info("%d rows; by source: %s", len(df), df.source.value_counts().to_dict())
    # in row groups, so the stages after this one read the rows they keep a group at a time
    write_parquet_atomic(df, snakemake.output.table, row_group_size=ROW_GROUP_ROWS)
    model.write(snakemake.output.model)  # every later stage reads these fits: none fits again


cached_job(snakemake, make)  # the same tables give the same table
