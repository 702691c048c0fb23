# Shared set-up: check the config beyond its JSON schema and list the jobs the sweeps fan out into.
import sys
from pathlib import Path

sys.path.insert(0, workflow.basedir)  # kernels/ and experiments/ are imported from the repo root

from experiments import config as experiment_config

try:
    CORRECTNESS_CASES = experiment_config.correctness_cases(config)
except experiment_config.ConfigError as e:
    raise WorkflowError(str(e)) from None

CORRECTNESS_KERNELS = list(CORRECTNESS_CASES)


wildcard_constraints:
    kernel="|".join(CORRECTNESS_KERNELS),

try:
    STUDY_JOBS = experiment_config.study_jobs(config)
except experiment_config.ConfigError as e:
    raise WorkflowError(str(e)) from None

TARGETS = config["targets"]

# The code behind each stage's numbers: editing it reruns that stage (Snakemake tracks scripts, not
# the modules they import). Paths are absolute: the working directory may be elsewhere (--directory).
REPO = Path(workflow.basedir)
KERNEL_CODE = sorted(str(p) for p in REPO.glob("kernels/*.py"))
CORRECTNESS_CODE = KERNEL_CODE + [
    str(REPO / "experiments" / f"{m}.py") for m in ("cases", "correctness", "inputs")
]
STUDY_CODE = KERNEL_CODE + [
    str(REPO / "experiments" / f"{m}.py")
    for m in (
        "cases",
        "chips",
        "compile_worker",
        "compiler_output",
        "extrapolate",
        "provenance",
        "study",
        "tpu_compile",
        "traffic",
    )
]


def study_outputs(target):
    return [
        f"results/estimates/{t}/{experiment}_{dtype}.parquet"
        for t, experiment, dtype in STUDY_JOBS
        if t == target
    ]


from figures.catalog import figure_specs

# The report's own sources: templates, catalogs, the kernels it quotes, its code.
REPORT_SOURCES = sorted(
    str(p)
    for pattern in ("report/templates/*", "report/locale/*/LC_MESSAGES/*.po", "report/*.py", "kernels/*.py")
    for p in REPO.glob(pattern)
)
PUBLISHED = str(REPO / "data" / "published_v5e.csv")

FIGURES = figure_specs(config)


wildcard_constraints:
    name="|".join(FIGURES),
    target="|".join(TARGETS),
    experiment="[A-Za-z0-9]+",
    dtype="float32|bfloat16|int8",
