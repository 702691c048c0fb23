# Shared set-up: make the repository importable, check the config beyond its JSON schema, and list
# the jobs the sweeps fan out into.
import os
import sys

# Scripts run in their own Python processes; they import kernels/ and experiments/ from here.
sys.path.insert(0, workflow.basedir)
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (workflow.basedir, os.environ.get("PYTHONPATH")) if p
)

from experiments import config as experiment_config

try:
    CORRECTNESS_CASES = experiment_config.correctness_cases(config)
except experiment_config.ConfigError as e:
    raise WorkflowError(str(e)) from None

CORRECTNESS_KERNELS = list(CORRECTNESS_CASES)


wildcard_constraints:
    kernel="|".join(CORRECTNESS_KERNELS),
