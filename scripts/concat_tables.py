"""Snakemake script: concatenate parquet tables (same schema) into one."""
import _job  # noqa: F401  (first: a Ctrl-C ends the job without a traceback)

from tpu_matmul_repro.experiments.core.output_cache import cached_job


def make(log) -> None:
    from tpu_matmul_repro.experiments.core.atomic_write import concat_parquet, write_parquet_atomic

    df = concat_parquet(snakemake.input)
    log.info("%d rows from %d files", len(df), len(snakemake.input))
    write_parquet_atomic(df, snakemake.output[0])


cached_job(snakemake, make)  # the same tables, the same bytes
