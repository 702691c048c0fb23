"""Snakemake script: every claim of the post checked against this run's table (results/claims.csv)."""
import _job  # noqa: F401  (first: a Ctrl-C ends the job without a traceback)

from tpu_matmul_repro.experiments.core.output_cache import cached_job


def make(log) -> None:
    from tpu_matmul_repro.analysis.claims import claims_table
    from tpu_matmul_repro.analysis.fitted_model import FittedModel
    from tpu_matmul_repro.analysis.runs import read_results
    from tpu_matmul_repro.analysis.toolchain_rows import primary_rows
    from tpu_matmul_repro.experiments.core.atomic_write import write_csv_atomic
    from tpu_matmul_repro.experiments.plan.toolchains import primary, served

    df = read_results(snakemake.input.table)  # each target's latest measured run, no raw samples
    mine = primary(snakemake.config)
    # under each target's own compiler (a study may check them under other toolchains too)
    model = FittedModel.read(snakemake.input.model)  # the run's fits, made once by the aggregate
    claims = claims_table(primary_rows(df, mine, served(snakemake.config)), model, mine)
    log.info("claims:\n%s", claims[["claim_id", "verdict", "reason"]].to_string())
    write_csv_atomic(claims, snakemake.output[0])


cached_job(snakemake, make)  # the same table gives the same verdicts
