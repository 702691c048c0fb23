# Shared set-up: check the config beyond its JSON schema and list the jobs the sweeps fan out into.
import sys

sys.path.insert(0, workflow.basedir)  # kernels/ and experiments/ are imported from the repo root

from experiments import config as experiment_config

try:
    CORRECTNESS_CASES = experiment_config.correctness_cases(config)
except experiment_config.ConfigError as e:
    raise WorkflowError(str(e)) from None

CORRECTNESS_KERNELS = list(CORRECTNESS_CASES)


wildcard_constraints:
    kernel="|".join(CORRECTNESS_KERNELS),
