"""Snakemake script: no configuration and run label in two measurement files (each checked already)."""
import _repo  # noqa: F401  (puts the repository root on sys.path)

from experiments.core.runtime import logged
from experiments.core.schema import check_unique_files
from experiments.core.tables import write_text_atomic

with logged(snakemake.log[0]) as log:
    check_unique_files(snakemake.input.measured)
    log.info("%d measurement files, no configuration and run label in two of them",
             len(snakemake.input.measured))
    write_text_atomic(f"{len(snakemake.input.measured)} files checked\n", snakemake.output[0])
