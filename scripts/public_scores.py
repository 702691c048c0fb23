"""Snakemake script: the timing model scored on the public TPU matmul measurements
(analysis/public_validation.py): results/public_scores.csv and fidelity.csv's rows for them."""
import _job  # noqa: F401  (first: a Ctrl-C ends the job without a traceback)

from tpu_matmul_repro.experiments.core.output_cache import cached_job


def make(log) -> None:
    import pandas as pd

    from tpu_matmul_repro.analysis import public_validation
    from tpu_matmul_repro.analysis.fitted_model import FittedModel
    from tpu_matmul_repro.analysis.public_measurements import load
    from tpu_matmul_repro.analysis.runs import read_results
    from tpu_matmul_repro.analysis.toolchain_rows import primary_rows
    from tpu_matmul_repro.experiments.core.atomic_write import write_csv_atomic
    from tpu_matmul_repro.experiments.core.schema import COLUMNS
    from tpu_matmul_repro.experiments.plan.toolchains import primary, served

    config = snakemake.config
    run = primary_rows(read_results(snakemake.input.table), primary(config), served(config))
    paths = list(snakemake.input.estimates)
    estimates = (pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True) if paths
                 else pd.DataFrame(columns=COLUMNS))
    model = FittedModel.read(snakemake.input.model)  # the run's fits: never refitted here
    scores, fidelity = public_validation.score(run, estimates, model, load(snakemake.input.public))
    log.info("public measurements: %d rows, %d modelled\n%s", len(scores), scores.model_seconds.notna().sum(),
             fidelity[fidelity.scope == "all"].to_string())
    write_csv_atomic(scores, snakemake.output.scores)
    write_csv_atomic(fidelity, snakemake.output.fidelity)


cached_job(snakemake, make)  # the fit and the scores are deterministic
