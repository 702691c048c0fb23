"""Snakemake script: agreement with the post (fidelity.csv) and best Pallas against XLA."""
import _repo  # noqa: F401  (puts the repository root on sys.path)

import pandas as pd

from experiments.core.runtime import logged
from experiments.analysis.summaries import best_vs_xla, fidelity
from experiments.core.tables import write_csv_atomic

with logged(snakemake.log[0]) as log:
    df = pd.read_parquet(snakemake.input[0])
    agreement = fidelity(df)
    best = best_vs_xla(df)
    log.info("fidelity:\n%s\nbest vs xla:\n%s", agreement.to_string(), best.to_string())
    write_csv_atomic(agreement, snakemake.output.fidelity)
    write_csv_atomic(best, snakemake.output.best_vs_xla)
