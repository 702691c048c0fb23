"""Snakemake script: build (or find, cached) a toolchain's environment; write its manifest as the marker.

A toolchain that cannot be installed does not stop the run: the marker records the failure, the
toolchain's jobs turn it into toolchain_error rows, and the report says why its results are missing.
"""
import _repo  # noqa: F401  (puts the repository root on sys.path)

from experiments.compile_study.toolchain_jobs import environment_marker
from experiments.core import codec
from experiments.core.runtime import logged

with logged(snakemake.log[0]) as log:
    environment_marker(codec.decode(snakemake.params.toolchain), snakemake.params.path, snakemake.output[0],
                       log)
