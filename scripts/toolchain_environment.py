"""Snakemake script: build (or find, cached) a toolchain's environment and write its manifest as the
marker; a failed install is recorded there (toolchain_error rows follow), not a failed run.
"""
import sys

import _job  # noqa: F401  (first: a Ctrl-C ends the job without a traceback)

from tpu_matmul_repro.experiments.compile_study.toolchain_env import built_or_reused
from tpu_matmul_repro.experiments.compile_study.toolchain_jobs import environment_marker
from tpu_matmul_repro.experiments.core import codec
from tpu_matmul_repro.experiments.core.runtime import logged

with logged(snakemake.log[0]) as log:
    manifest = environment_marker(codec.decode(snakemake.params.toolchain), snakemake.params.path,
                                  snakemake.output[0], log)
    if manifest["status"] == "ok":  # a failure is said on the console already
        log.info(built_or_reused(manifest))
        print(built_or_reused(manifest), file=sys.__stderr__, flush=True)  # the console, past the log
