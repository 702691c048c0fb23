"""Imported first by every Snakemake script: puts the repository root on sys.path.

Snakemake adds only a script's own folder to sys.path; kernels/ and experiments/ live one level up.
The project is deliberately not installed (its package names are generic), so scripts, tests and
notebooks all import it from the repository root.
"""
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
