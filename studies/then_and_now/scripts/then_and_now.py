"""Snakemake script: the post's configurations under each toolchain against the post's verdicts."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[2]))  # the repository root: its packages

from experiments.analysis.runs import read_results
from experiments.analysis.toolchains import toolchains_of
from experiments.core.runtime import logged
from experiments.core.tables import write_csv_atomic
from experiments.plan.toolchains import primary
from studies.then_and_now.analysis import agreement, then_and_now

with logged(snakemake.log[0]) as log:
    df = read_results(snakemake.input[0])  # each target's latest measured run, no raw samples
    name = primary(snakemake.config)
    table = then_and_now(df, name)
    for toolchain in toolchains_of(df, name):
        log.info("feasibility agreement with the post: %s", agreement(table, toolchain))
    write_csv_atomic(table, snakemake.output[0])
