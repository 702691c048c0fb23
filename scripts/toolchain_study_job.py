"""Snakemake script: one (toolchain, target, experiment, dtype) job, compiled in the toolchain's
environment."""
import _repo  # noqa: F401  (puts the repository root on sys.path)

from experiments.compile_study.toolchain_jobs import run_toolchain_job
from experiments.core import codec
from experiments.core.runtime import logged
from experiments.core.tables import write_parquet_atomic

with logged(snakemake.log[0]) as log:
    job, toolchain = codec.decode(snakemake.params.job), codec.decode(snakemake.params.toolchain)
    log.info("toolchain=%s target=%s experiment=%s: %d configurations", job.toolchain, job.target,
             job.experiment, len(job.cases))
    with open(snakemake.log[0], "a") as worker_stderr:
        df = run_toolchain_job(job, toolchain, snakemake.params.path,
                               snakemake.input.environment, log, stderr=worker_stderr)
    log.info("status counts: %s", df.status.value_counts().to_dict())
    write_parquet_atomic(df, snakemake.output[0])
