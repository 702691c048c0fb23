"""Snakemake script: the post's configurations under each toolchain against the post's verdicts."""

from tpu_matmul_repro.analysis.runs import read_results
from tpu_matmul_repro.analysis.toolchain_rows import toolchains_of
from tpu_matmul_repro.experiments.core.atomic_write import write_csv_atomic
from tpu_matmul_repro.experiments.core.runtime import logged
from tpu_matmul_repro.experiments.plan.toolchains import primary
from tpu_matmul_repro.studies.then_and_now.analysis import agreement, then_and_now

with logged(snakemake.log[0]) as log:
    df = read_results(snakemake.input[0])  # each target's latest measured run, no raw samples
    name = primary(snakemake.config)
    table = then_and_now(df, name)
    for toolchain in toolchains_of(df, name):
        log.info("feasibility agreement with the post: %s", agreement(table, toolchain))
    write_csv_atomic(table, snakemake.output[0])
