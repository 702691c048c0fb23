"""Snakemake script: a toolchain's compile jobs for one target, compiled in the toolchain's
environment with shared compile workers."""
import _repo  # noqa: F401  (puts the repository root on sys.path)

from experiments.compile_study.toolchain_jobs import run_toolchain_jobs
from experiments.core import codec
from experiments.core.runtime import logged
from experiments.core.tables import write_parquet_atomic

with logged(snakemake.log[0]) as log:
    jobs, toolchain = codec.decode(snakemake.params.jobs), codec.decode(snakemake.params.toolchain)
    for job in jobs:
        log.info("toolchain=%s target=%s experiment=%s: %d configurations", job.toolchain, job.target,
                 job.experiment, len(job.cases))
    with open(snakemake.log[0], "a") as worker_stderr:
        df = run_toolchain_jobs(jobs, toolchain, snakemake.params.path,
                                snakemake.input.environment, log, stderr=worker_stderr)
    log.info("status counts: %s", df.status.value_counts().to_dict())
    write_parquet_atomic(df, snakemake.output[0])
