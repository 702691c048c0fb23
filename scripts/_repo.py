"""Imported first by every Snakemake script: puts the repository root on sys.path.

Snakemake adds only a script's own folder to sys.path; kernels/ and experiments/ live one level up.
The project is deliberately not installed (its package names are generic), so scripts, tests and
notebooks all import it from the repository root.

A Ctrl-C reaches every process of the run (Snakemake's and each job's): a job stops without a
traceback of its own, exit code 130, and Snakemake's workflow says once that the run was interrupted
(Snakefile, onerror).
"""
import os
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def _quiet_interrupt(kind, value, traceback):
    if issubclass(kind, KeyboardInterrupt):
        sys.stdout.flush()
        os._exit(130)  # every `finally` has run already: temporary files are gone
    sys.__excepthook__(kind, value, traceback)


sys.excepthook = _quiet_interrupt
