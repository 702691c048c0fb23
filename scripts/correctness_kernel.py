"""Snakemake script: correctness rows of one kernel (all its dtypes, shapes, blocks and modes)."""
import _repo  # noqa: F401  (puts the repository root on sys.path)

from experiments.core.runtime import logged, use_cpu_jax

use_cpu_jax()

from experiments.core import codec  # noqa: E402
from experiments.core.tables import write_parquet_atomic  # noqa: E402
from experiments.correctness.interpret import run_correctness  # noqa: E402

with logged(snakemake.log[0]) as log:
    df = run_correctness(codec.decode(snakemake.params.cases), codec.decode(snakemake.params.tolerance),
                         num_cores=snakemake.params.num_cores)
    log.info("%d cases, %d passed\n%s", len(df), int(df.passed.sum()), df.to_string())
    write_parquet_atomic(df, snakemake.output[0])
