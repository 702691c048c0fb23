"""Snakemake script: the advisor's ranked table and figure for one shape, on the config's targets."""
from pathlib import Path

import _job  # noqa: F401  (first: a Ctrl-C ends the job without a traceback)
import pandas as pd

from tpu_matmul_repro.advise.cli import advice, compiler_for
from tpu_matmul_repro.advise.figure import draw
from tpu_matmul_repro.advise.request import checked
from tpu_matmul_repro.experiments.core import codec
from tpu_matmul_repro.experiments.core.runtime import logged
from tpu_matmul_repro.experiments.core.tables import write_csv_atomic

with logged(snakemake.log[0]) as log:
    wanted = codec.decode(snakemake.params.request)
    asked = checked([wanted["shape"]], wanted["dtype"], wanted["targets"], wanted["kernel"])
    compilers = {t: compiler_for(t, snakemake.config) for t in asked.targets}
    parts, texts = advice(asked, snakemake.config, compilers, Path(snakemake.input.constants).parent)
    log.info("\n\n".join(texts))
    table = pd.concat(parts, ignore_index=True)
    write_csv_atomic(table, snakemake.output.table)
    draw(table, snakemake.output.figure, f"{wanted['shape']} {wanted['dtype']}, kernel {wanted['kernel']}")
