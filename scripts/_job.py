"""Imported first by every Snakemake script (its folder is on sys.path), before jax or anything slow:
a Ctrl-C stops the job without a traceback, exit code 130; the workflow says once it was interrupted.
"""
import os
import sys


def _quiet_interrupt(kind, value, traceback):
    if issubclass(kind, KeyboardInterrupt):
        sys.stdout.flush()
        os._exit(130)  # every `finally` has run already: temporary files are gone
    sys.__excepthook__(kind, value, traceback)


sys.excepthook = _quiet_interrupt
