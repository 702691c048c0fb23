"""Snakemake script: agreement with the post (fidelity.csv) and best Pallas against XLA."""
import _repo  # noqa: F401  (puts the repository root on sys.path)

import pandas as pd

from experiments.core.runtime import logged
from experiments.analysis.summaries import best_vs_xla, fidelity
from experiments.analysis.toolchains import primary_rows
from experiments.core.tables import write_csv_atomic
from experiments.plan.toolchains import primary

with logged(snakemake.log[0]) as log:
    # the pipeline toolchain's estimates (results/then_and_now.csv compares the toolchains)
    df = primary_rows(pd.read_parquet(snakemake.input[0]), primary(snakemake.config))
    agreement = fidelity(df)
    best = best_vs_xla(df)
    log.info("fidelity:\n%s\nbest vs xla:\n%s", agreement.to_string(), best.to_string())
    write_csv_atomic(agreement, snakemake.output.fidelity)
    write_csv_atomic(best, snakemake.output.best_vs_xla)
