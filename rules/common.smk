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

# The code behind the estimates: editing it reruns the study (Snakemake tracks scripts, not imports).
STUDY_CODE = sorted(
    str(p)
    for pattern in ("kernels/*.py", "experiments/*.py")
    for p in Path(workflow.basedir).glob(pattern)
)
CORRECTNESS_CODE = [
    p
    for p in STUDY_CODE
    if "/kernels/" in p
    or p.endswith(("correctness.py", "cases.py", "inputs.py"))
]


def study_outputs(target):
    return [
        f"results/estimates/{t}/{experiment}_{dtype}.parquet"
        for t, experiment, dtype in STUDY_JOBS
        if t == target
    ]


from figures.catalog import figure_specs

FIGURES = figure_specs(config)


wildcard_constraints:
    name="|".join(FIGURES),
    target="|".join(TARGETS),
    experiment="[A-Za-z0-9]+",
    dtype="float32|bfloat16|int8",
