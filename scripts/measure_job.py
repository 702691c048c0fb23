"""Snakemake script: measure one experiment and dtype on this run's device, each configuration in a
worker process it can kill (experiments/measure/timing_worker.py); this process never opens the device.
"""
import _job  # noqa: F401  (first: a Ctrl-C ends the job without a traceback)

from tpu_matmul_repro.experiments.core.runtime import logged, use_cpu_jax

use_cpu_jax()  # the TPU belongs to the measuring worker, one process at a time

from tpu_matmul_repro.experiments.core import codec  # noqa: E402
from tpu_matmul_repro.experiments.core.atomic_write import write_parquet_atomic  # noqa: E402
from tpu_matmul_repro.experiments.measure.harness import run_measure_job  # noqa: E402

job = codec.decode(snakemake.params.job)
with logged(snakemake.log[0]) as log:
    log.info("measuring on %s (%s); experiment %s: %d configurations, timeout_s=%s each",
             job.device.name, job.device.device_kind, job.experiment, len(job.cases), job.settings.timeout_s)
    df = run_measure_job(job)
    log.info("status counts: %s", df.status.value_counts().to_dict())
    write_parquet_atomic(df, snakemake.output[0])
