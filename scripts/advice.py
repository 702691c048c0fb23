"""Snakemake script: the advisor's ranked table and figure for one shape, on the config's targets, with
the run's own timing model (no fit of its own) and its compiles from the compile cache where the
compile study made them (the log says how many)."""
import _job  # noqa: F401  (first: a Ctrl-C ends the job without a traceback)

from tpu_matmul_repro.experiments.core.output_cache import cached_job
from tpu_matmul_repro.experiments.core.provenance import git_sha


def make(log) -> bool:
    from pathlib import Path

    import pandas as pd

    from tpu_matmul_repro.advise.cli import advice, compiler_for
    from tpu_matmul_repro.advise.request import AdviceError, checked
    from tpu_matmul_repro.experiments.compile_study import cache
    from tpu_matmul_repro.experiments.core import codec
    from tpu_matmul_repro.experiments.core.atomic_write import write_csv_atomic
    from tpu_matmul_repro.experiments.core.runtime import UserError
    from tpu_matmul_repro.experiments.core.units import MiB
    from tpu_matmul_repro.figures.advice_figure import render

    wanted = codec.decode(snakemake.params.request)
    limit = wanted["vmem_limit_mib"] * MiB if wanted["vmem_limit_mib"] else None
    try:
        asked = checked([wanted["shape"]], wanted["dtype"], wanted["targets"], wanted["kernel"], limit)
        compilers = {t: compiler_for(t, snakemake.config) for t in asked.targets}
        # the run's public scores only where they are this job's input: a stale file never counts
        parts, texts = advice(asked, snakemake.config, compilers, Path(snakemake.input.model).parent,
                              fallback=False, log=log, workers=snakemake.threads,
                              public=bool(getattr(snakemake.input, "public", [])))
    except AdviceError as e:
        raise UserError(f"advice {wanted['shape']}: {e}") from None
    log.info("\n\n".join(texts))
    table = pd.concat(parts, ignore_index=True)
    write_csv_atomic(table, snakemake.output.table)
    # every language and format, each file with its provenance (the commit that drew it)
    render(table, snakemake.wildcards.shape, Path(snakemake.output.table).parent, git_sha())
    return cache.all_kept()  # a timeout or a crashed worker: another run may compile it


# the run's model (its inputs) and deterministic compiles give the same ranking and figures; the
# figures name this checkout's commit, so the commit is part of the key
cached_job(snakemake, make, extra=lambda: {"git_sha": git_sha()})
