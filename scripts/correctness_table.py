"""Snakemake script: the correctness table of all kernels."""
import _job  # noqa: F401  (first: a Ctrl-C ends the job without a traceback)

from tpu_matmul_repro.experiments.core.output_cache import cached_job


def make(log) -> None:
    from tpu_matmul_repro.experiments.core.atomic_write import concat_parquet, write_parquet_atomic

    df = concat_parquet(snakemake.input)
    failed = df[~df.passed]
    log.info("%d rows, %d failed", len(df), len(failed))
    if len(failed):
        log.warning("failed cases:\n%s", failed.to_string())
    write_parquet_atomic(df, snakemake.output[0])


cached_job(snakemake, make)  # the same tables, the same bytes
