"""Snakemake script: no configuration and run label in two measurement files (each checked already)."""
import _job  # noqa: F401  (first: a Ctrl-C ends the job without a traceback)

from tpu_matmul_repro.experiments.core.atomic_write import write_text_atomic
from tpu_matmul_repro.experiments.core.runtime import logged
from tpu_matmul_repro.experiments.core.schema import check_unique_files

with logged(snakemake.log[0]) as log:
    check_unique_files(snakemake.input.measured)
    log.info("%d measurement files, no configuration and run label in two of them",
             len(snakemake.input.measured))
    write_text_atomic(f"{len(snakemake.input.measured)} files checked\n", snakemake.output[0])
