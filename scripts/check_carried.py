"""Snakemake script: check one carried measurement file before it joins the table."""
import _job  # noqa: F401  (first: a Ctrl-C ends the job without a traceback)

from tpu_matmul_repro.experiments.core.atomic_write import write_text_atomic
from tpu_matmul_repro.experiments.core.runtime import logged
from tpu_matmul_repro.experiments.core.schema import check_measured

with logged(snakemake.log[0]) as log:
    df = check_measured(snakemake.input[0], min_samples=snakemake.params.min_samples,
                        max_rows=snakemake.params.max_rows, tolerance=dict(snakemake.params.tolerance))
    log.info("%s: %d rows, %d ok; targets %s", snakemake.input[0], len(df), int((df.status == "ok").sum()),
             sorted(df.target.unique()))
    write_text_atomic(f"{len(df)} rows checked\n", snakemake.output[0])
