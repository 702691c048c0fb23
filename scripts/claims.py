"""Snakemake script: every claim of the post checked against this run's table (results/claims.csv)."""
import _repo  # noqa: F401  (puts the repository root on sys.path)

import pandas as pd

from experiments.analysis.claims import claims_table
from experiments.core.runtime import logged
from experiments.core.tables import write_csv_atomic

with logged(snakemake.log[0]) as log:
    claims = claims_table(pd.read_parquet(snakemake.input[0]))
    log.info("claims:\n%s", claims[["claim_id", "verdict", "reason"]].to_string())
    write_csv_atomic(claims, snakemake.output[0])
