"""Snakemake script: correctness rows of one kernel (all its dtypes, shapes, blocks and modes)."""
import _job  # noqa: F401  (first: a Ctrl-C ends the job without a traceback)

from tpu_matmul_repro.experiments.core.output_cache import cached_job
from tpu_matmul_repro.experiments.core.runtime import use_cpu_jax


def make(log) -> None:
    use_cpu_jax()
    from tpu_matmul_repro.experiments.core import codec
    from tpu_matmul_repro.experiments.core.atomic_write import write_parquet_atomic
    from tpu_matmul_repro.experiments.correctness.interpret import run_correctness

    df = run_correctness(codec.decode(snakemake.params.cases), codec.decode(snakemake.params.tolerance),
                         num_cores=snakemake.params.num_cores)
    log.info("%d cases, %d passed\n%s", len(df), int(df.passed.sum()), df.to_string())
    write_parquet_atomic(df, snakemake.output[0])


# interpret mode on the CPU is deterministic: the same kernels, cases and packages, the same rows
cached_job(snakemake, make)
