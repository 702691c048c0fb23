"""Snakemake script: measure one experiment and dtype on this run's device."""
import _repo  # noqa: F401  (puts the repository root on sys.path)

import json

from experiments.core.runtime import logged, use_cpu_jax

# The job's settings, as recorded by Snakemake (experiments/core/codec.py). Its platform is read before
# anything imports JAX: on the CPU, JAX must not probe for the TPU that libtpu's presence suggests.
if json.loads(snakemake.params.job)["device"]["platform"] == "cpu":
    use_cpu_jax()

import jax  # noqa: E402

from experiments.core import codec  # noqa: E402
from experiments.measure.harness import run_measure_job  # noqa: E402
from experiments.core.tables import write_parquet_atomic  # noqa: E402

job = codec.decode(snakemake.params.job)
with logged(snakemake.log[0]) as log:
    found = jax.devices()[0]
    log.info("device %s (%s), %d devices; experiment %s: %d configurations", found.platform,
             found.device_kind, len(jax.devices()), job.experiment, len(job.cases))
    if found.platform != job.device.platform:
        raise RuntimeError(f"this job measures on {job.device.platform}, but JAX's default device is "
                           f"{found.platform} ({found.device_kind})")
    df = run_measure_job(job)
    log.info("status counts: %s", df.status.value_counts().to_dict())
    write_parquet_atomic(df, snakemake.output[0])
