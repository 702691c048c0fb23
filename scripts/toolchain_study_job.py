"""Snakemake script: a toolchain's compile jobs for one target, compiled in the toolchain's
environment with shared compile workers."""
import _job  # noqa: F401  (first: a Ctrl-C ends the job without a traceback)

from tpu_matmul_repro.experiments.compile_study.toolchain_jobs import run_toolchain_jobs
from tpu_matmul_repro.experiments.core import codec
from tpu_matmul_repro.experiments.core.atomic_write import write_parquet_atomic
from tpu_matmul_repro.experiments.core.runtime import logged

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
