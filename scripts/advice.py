"""Snakemake script: the advisor's ranked table and figure for one shape, on the config's targets."""
from pathlib import Path

import _repo  # noqa: F401  (puts the repository root on sys.path)
import pandas as pd

from advise.cli import advice, compiler_for
from advise.figure import draw
from advise.request import checked
from experiments.core import codec
from experiments.core.runtime import logged
from experiments.core.tables import write_csv_atomic

with logged(snakemake.log[0]) as log:
    wanted = codec.decode(snakemake.params.request)
    asked = checked([wanted["shape"]], wanted["dtype"], wanted["targets"], wanted["kernel"])
    compilers = {t: compiler_for(t, snakemake.config) for t in asked.targets}
    parts, texts = advice(asked, snakemake.config, compilers, Path(snakemake.input.constants).parent)
    log.info("\n\n".join(texts))
    table = pd.concat(parts, ignore_index=True)
    write_csv_atomic(table, snakemake.output.table)
    draw(table, snakemake.output.figure, f"{wanted['shape']} {wanted['dtype']}, kernel {wanted['kernel']}")
