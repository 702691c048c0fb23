"""Snakemake script: the post's claims about what compiles under each other toolchain of the run."""

from tpu_matmul_repro.analysis.runs import read_results
from tpu_matmul_repro.experiments.core.atomic_write import write_csv_atomic
from tpu_matmul_repro.experiments.core.runtime import logged
from tpu_matmul_repro.experiments.plan.toolchains import primary
from tpu_matmul_repro.studies.then_and_now.analysis import claims_then

with logged(snakemake.log[0]) as log:
    df = read_results(snakemake.input[0])  # each target's latest measured run, no raw samples
    claims = claims_then(df, primary(snakemake.config))
    if len(claims):
        log.info("claims under the other toolchains:\n%s",
                 claims[["claim_id", "toolchain", "verdict", "reason"]].to_string())
    write_csv_atomic(claims, snakemake.output[0])
