"""Snakemake script: compile one (target, experiment, dtype) job of the TPU compile study."""
import _job  # noqa: F401  (first: a Ctrl-C ends the job without a traceback)

from tpu_matmul_repro.experiments.core.output_cache import reuse_or_make
from tpu_matmul_repro.experiments.core.provenance import git_sha
from tpu_matmul_repro.experiments.core.runtime import logged


def make(log) -> bool:
    from tpu_matmul_repro.experiments.compile_study import cache
    from tpu_matmul_repro.experiments.compile_study.study import run_job
    from tpu_matmul_repro.experiments.core import codec
    from tpu_matmul_repro.experiments.core.atomic_write import write_parquet_atomic

    job = codec.decode(snakemake.params.job)
    log.info("target=%s experiment=%s: %d configurations", job.target, job.experiment, len(job.cases))
    # The compile workers' own stderr (libtpu's start-up noise, compiler warnings) goes to the log too.
    with open(snakemake.log[0], "a") as worker_stderr:
        df = run_job(job, stderr=worker_stderr)
    log.info("status counts: %s", df.status.value_counts().to_dict())
    write_parquet_atomic(df, snakemake.output[0])
    return cache.all_kept()  # a timeout or a crashed worker: another run may compile it


with logged(snakemake.log[0]) as log:
    # The rows follow from the job, the code and the toolchain (the compiles are deterministic, each
    # row's compile_s the one its compile recorded) and name this checkout's commit: a second run
    # copies them instead of starting Python, pandas, jax and the compile workers again.
    reuse_or_make(snakemake, lambda: make(log), log, extra={"git_sha": git_sha()})
