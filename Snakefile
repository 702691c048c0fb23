# tpu-matmul-repro: reproduces "TPU MatMul Kernel" (Pallas MatMul kernels v1-v5 against XLA).
# Rules live in rules/*.smk; experiments are data in config/config.yaml.
import os
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

try:  # the project's own code is the installed package tpu_matmul_repro (pyproject.toml)
    from tpu_matmul_repro.experiments.core.previous_outputs import (
        PreviousOutputs,
        restored_message,
    )
    from tpu_matmul_repro.experiments.core.runtime import (
        UserError,
        record_interrupts,
        source_date_epoch,
    )
    from tpu_matmul_repro.experiments.plan.config import ConfigError, load_yaml
except ModuleNotFoundError as e:
    raise WorkflowError(
        f"{e.name} is not importable: install the project first, "
        "`python3 -m pip install -r requirements.txt -e .` (README, Run it)"
    ) from None

# Read strictly first (file and line of a YAML error, a key given twice, aliases and nesting bounded),
# then as Snakemake does; the default profile did so already, this covers a run without it.
try:
    source_date_epoch()
    for _path in ["config/config.yaml", *workflow.config_settings.configfiles]:
        if os.path.exists(_path):  # a missing one is Snakemake's to report
            load_yaml(_path)
except (ConfigError, UserError) as e:
    raise WorkflowError(str(e)) from None


configfile: "config/config.yaml"


# Ctrl-C: each job exits without a traceback (scripts/_job.py); the run says once how to resume.
INTERRUPTED = record_interrupts()
# The outputs the jobs replace, put back with their metadata records where a job fails or is stopped
# (Snakemake's persistence's own methods: snakemake 9.x, requirements.txt).
PREVIOUS = PreviousOutputs()


onstart:
    PREVIOUS.keep(
        [f for job in workflow.dag.needrun_jobs() for f in job.output],
        read_record=getattr(workflow.persistence, "_read_record", lambda path: None),
    )


onsuccess:
    PREVIOUS.discard()


onerror:
    _restored = PREVIOUS.restore(write_record=getattr(workflow.persistence, "_write_record", None))
    if _restored:
        logger.error(restored_message(_restored))
    if INTERRUPTED:
        logger.error(
            "Interrupted: the jobs that finished are kept; run the same command again to resume."
        )


include: "rules/common.smk"
include: "rules/correctness.smk"
include: "rules/compile_study.smk"
include: "rules/toolchains.smk"
include: "rules/measure.smk"
include: "rules/aggregate.smk"
include: "rules/validation.smk"


# Optional studies (studies/README.md), before the figures and the report they add to: their outputs
# join `all`, their tables the report's inputs.
STUDY_OUTPUTS = []
REPORT_TABLES = {}  # name -> results/<name>.csv, read by a study's report section (report/sections.py)
if PUBLIC_FILES:  # the public scores' report section (report/public_scores.py)
    REPORT_TABLES["public_scores"] = PUBLIC_FILES[0]
for _study_rules in sorted(Path(workflow.basedir).glob("studies/*/rules.smk")):

    include: _study_rules


include: "rules/figures.smk"
include: "rules/report.smk"
include: "rules/advice.smk"


rule all:
    input:
        "results/correctness.parquet",
        "results/matmul.parquet",
        "results/timing_model.json",
        "results/fidelity.csv",
        "results/best_vs_xla.csv",
        "results/timing_model.csv",
        "results/claims.csv",
        PUBLIC_FILES,
        expand("results/figures/{name}.png", name=FIGURES),
        expand("results/report/report.{lang}.{ext}", lang=LANGUAGES, ext=["html", "pdf"]),
        ADVICE_FILES,
        STUDY_OUTPUTS,
