"""Snakemake script: the correctness table of all kernels."""
import _repo  # noqa: F401  (puts the repository root on sys.path)

from experiments.core.runtime import logged
from experiments.core.tables import concat_parquet, write_parquet_atomic

with logged(snakemake.log[0]) as log:
    df = concat_parquet(snakemake.input)
    failed = df[~df.passed]
    log.info("%d rows, %d failed", len(df), len(failed))
    if len(failed):
        log.warning("failed cases:\n%s", failed.to_string())
    write_parquet_atomic(df, snakemake.output[0])
