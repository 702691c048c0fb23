"""Snakemake script: concatenate parquet tables (same schema) into one."""
import _repo  # noqa: F401  (puts the repository root on sys.path)

from experiments.core.runtime import logged
from experiments.core.tables import concat_parquet, write_parquet_atomic

with logged(snakemake.log[0]) as log:
    df = concat_parquet(snakemake.input)
    log.info("%d rows from %d files", len(df), len(snakemake.input))
    write_parquet_atomic(df, snakemake.output[0])
