"""Snakemake script: check one carried measurement file before it joins the table."""
import _repo  # noqa: F401  (puts the repository root on sys.path)

from experiments.core.runtime import logged
from experiments.core.schema import check_measured
from experiments.core.tables import write_text_atomic

with logged(snakemake.log[0]) as log:
    df = check_measured(snakemake.input[0], min_samples=snakemake.params.min_samples,
                        max_rows=snakemake.params.max_rows)
    log.info("%s: %d rows, %d ok; targets %s", snakemake.input[0], len(df), int((df.status == "ok").sum()),
             sorted(df.target.unique()))
    write_text_atomic(f"{len(df)} rows checked\n", snakemake.output[0])
