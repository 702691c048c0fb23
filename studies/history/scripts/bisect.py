"""Snakemake script: bisect the jax/libtpu releases for the first release that changed each of the
post's VMEM figures (studies/history/run.py); sequential, as each probe depends on the last."""

from tpu_matmul_repro.experiments.core import codec
from tpu_matmul_repro.experiments.core.atomic_write import write_csv_atomic
from tpu_matmul_repro.experiments.core.runtime import logged
from tpu_matmul_repro.experiments.plan.job_lists import published_cases
from tpu_matmul_repro.studies.history import releases
from tpu_matmul_repro.studies.history.probes import ReleaseCompiler
from tpu_matmul_repro.studies.history.run import run_history

with logged(snakemake.log[0]) as log:
    settings = codec.decode(snakemake.params.settings)
    listed = releases.read(snakemake.input.releases)
    for release in listed[len(releases.probed(listed)):]:
        log.info("not probed: %s: %s", release.describe(), release.note)
    listed = releases.probed(listed)
    log.info("%d releases: %s to %s", len(listed), listed[0].describe(), listed[-1].describe())
    cases = {}  # each configuration once, under the first experiment that published it
    for (experiment, _), found in published_cases(snakemake.input.published).items():
        for case in found:
            if experiment != "xla" and case.m in settings.sizes:
                cases.setdefault(case, experiment)
    with open(snakemake.log[0], "a") as worker_stderr:
        compiler = ReleaseCompiler(listed, snakemake.config, settings, stderr=worker_stderr)
        vmem, first, after = run_history(compiler, [(e, c) for c, e in cases.items()], log)
    write_csv_atomic(vmem, snakemake.output.vmem)
    write_csv_atomic(first, snakemake.output.first_change)
    write_csv_atomic(after, snakemake.output.after_change)
