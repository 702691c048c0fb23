"""Process set-up shared by the Snakemake scripts: JAX platform choice and logging to the job's log."""
import contextlib
import logging
import os
import sys


def use_cpu_jax() -> None:
    """Run JAX on the CPU (call before importing jax).

    Interpret-mode checks and deviceless TPU compiles need no accelerator; without this, an installed
    libtpu is probed at start-up and prints errors on a machine without a TPU.
    """
    os.environ["JAX_PLATFORMS"] = "cpu"


@contextlib.contextmanager
def logged(log_path):
    """Send this job's stdout, stderr and `logging` output to its Snakemake log file."""
    with open(log_path, "w") as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        logging.basicConfig(stream=log, level=logging.INFO, force=True,
                            format="%(asctime)s %(levelname)s %(message)s")
        yield logging.getLogger("tpu-matmul-repro")
