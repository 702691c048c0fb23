"""Imported first by every Snakemake script (Snakemake puts a script's own folder on sys.path), before
jax or anything slow: the project itself is installed (`pip install -e .`, package tpu_matmul_repro).

A Ctrl-C reaches every process of the run (Snakemake's and each job's): a job stops without a
traceback of its own, exit code 130, and Snakemake's workflow says once that the run was interrupted
(Snakefile, onerror).
"""
import os
import sys


def _quiet_interrupt(kind, value, traceback):
    if issubclass(kind, KeyboardInterrupt):
        sys.stdout.flush()
        os._exit(130)  # every `finally` has run already: temporary files are gone
    sys.__excepthook__(kind, value, traceback)


sys.excepthook = _quiet_interrupt
