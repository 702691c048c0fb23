"""Snakemake script: the timing model's fidelity to the post (cross-validated) and to the public
measurements (scored by rules/validation.smk), and its constants, from the run's fits
(results/timing_model.json); the ablation of its inputs, and the best Pallas configuration against XLA."""
import _job  # noqa: F401  (first: a Ctrl-C ends the job without a traceback)

from tpu_matmul_repro.experiments.core.output_cache import cached_job


def make(log) -> None:
    import pandas as pd

    from tpu_matmul_repro.analysis import ablation, timing_model, validation
    from tpu_matmul_repro.analysis.fitted_model import FittedModel, constants_table
    from tpu_matmul_repro.analysis.runs import read_results
    from tpu_matmul_repro.analysis.summaries import best_vs_xla
    from tpu_matmul_repro.analysis.toolchain_rows import primary_rows
    from tpu_matmul_repro.experiments.core.atomic_write import write_csv_atomic
    from tpu_matmul_repro.experiments.core.chips import POST_CHIP
    from tpu_matmul_repro.experiments.plan.toolchains import primary, served

    # each target's estimates from its own compiler (a study may compare the toolchains)
    config = snakemake.config
    df = primary_rows(read_results(snakemake.input.table), primary(config), served(config))
    model = FittedModel.read(snakemake.input.model)
    try:
        agreement = validation.fidelity_table(df, model)
    except timing_model.TooFewPoints as e:  # a small config: say so in the table, go on
        log.warning("timing model not fitted: %s", e)
        agreement = pd.DataFrame([dict(target=POST_CHIP, compared_with="published", note=f"not fitted: {e}")])
    # the public measurements' rows (compared_with "public") after the post's
    public = [pd.read_csv(path) for path in snakemake.input.public]
    agreement = pd.concat([agreement, *public], ignore_index=True)
    constants = constants_table(model)
    points, _ = timing_model.reference_points(df, source="published", target=POST_CHIP)
    try:  # the one other place that fits: each variant of the model, by design
        inputs = ablation.ablation_table(points)
    except timing_model.TooFewPoints as e:
        inputs = pd.DataFrame([dict(variant=ablation.DEFAULT, note=f"not fitted: {e}")])
    best = best_vs_xla(df)
    log.info("fidelity:\n%s\nconstants:\n%s\nbest vs xla:\n%s", agreement.to_string(), constants.to_string(),
             best.to_string())
    write_csv_atomic(agreement, snakemake.output.fidelity)
    write_csv_atomic(constants, snakemake.output.constants)
    write_csv_atomic(best, snakemake.output.best_vs_xla)
    write_csv_atomic(inputs, snakemake.output.ablation)


cached_job(snakemake, make)  # fits and cross-validation are deterministic
