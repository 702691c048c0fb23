# Shared set-up: check the config beyond its JSON schema and list the jobs the sweeps fan out into.
import re
import sys
from pathlib import Path

sys.path.insert(0, workflow.basedir)  # kernels/ and experiments/ are imported from the repo root

from snakemake.utils import validate

from experiments.plan import config as experiment_config
from experiments.measure import device as measure_device

REPO = Path(workflow.basedir)

# The config, after any --configfile or --config, against its JSON schema: first with messages that
# name the key and the value, then with Snakemake's validator, which also fills in defaults.
try:
    experiment_config.check_schema(config)
    experiment_config.check_toolchains(config)
except experiment_config.ConfigError as e:
    raise WorkflowError(str(e)) from None
validate(config, str(REPO / "config" / "schema.yaml"))

try:
    CORRECTNESS_CASES = experiment_config.correctness_cases(config)
except experiment_config.ConfigError as e:
    raise WorkflowError(str(e)) from None

CORRECTNESS_KERNELS = list(CORRECTNESS_CASES)


wildcard_constraints:
    kernel="|".join(CORRECTNESS_KERNELS),

# Real measurements: on a TPU host (or the CPU, on request); none elsewhere (see experiments/measure/device.py).
MEASURE = config.get("measure", {})
DEVICE = measure_device.detect(MEASURE.get("device", "auto"))
MEASURE_LABEL = MEASURE.get("label") or measure_device.host_label()
if DEVICE is None:
    logger.info(
        "No TPU found (measure.device=%s): this run compiles and estimates; it measures nothing, and "
        "every TFLOP/s it reports is an estimate (or the post's published number)." % MEASURE.get("device", "auto")
    )
else:
    logger.info("Measuring on %s (%s, %d chips) as results/measured/%s-%s.parquet"
                % (DEVICE.name, DEVICE.device_kind, DEVICE.num_chips, DEVICE.name, MEASURE_LABEL))
try:
    MEASURE_JOBS = experiment_config.measure_jobs(config, DEVICE, MEASURE_LABEL) if DEVICE else {}
except experiment_config.ConfigError as e:
    raise WorkflowError(str(e)) from None
MEASURED = [f"results/measured/{DEVICE.name}-{MEASURE_LABEL}.parquet"] if DEVICE else []
# Measurements carried from other machines: data/measured/*.parquet of the working directory (the
# checkout, unless --directory says otherwise; see the README).
IMPORTED = sorted(str(p) for p in Path("data/measured").glob("*.parquet"))

# The compile study's targets: the config's, plus the TPU generations measured here or imported, so
# each measurement has its estimate beside it.
TARGETS = list(dict.fromkeys(
    config["targets"] + measure_device.known_targets([DEVICE] if DEVICE else [], IMPORTED)
))
try:
    STUDY_JOBS = experiment_config.study_jobs({**config, "targets": TARGETS})
except experiment_config.ConfigError as e:
    raise WorkflowError(str(e)) from None

# The code behind each stage's numbers: editing it reruns that stage (Snakemake tracks scripts, not
# the modules they import).


def sources(*patterns):
    """This repository's files as inputs: absolute (the working directory may be elsewhere, see
    --directory) and local (on a cluster with remote storage every job has the workflow's sources)."""
    return [local(str(p)) for pattern in patterns for p in sorted(REPO.glob(pattern))]


def modules(*names):
    return [f"experiments/{name}.py" for name in names]


KERNEL_CODE = sources("kernels/*.py")
CORRECTNESS_CODE = sources("kernels/*.py", *modules("cases", "correctness", "inputs"))
STUDY_CODE = sources(
    "kernels/*.py",
    *modules("cases", "chips", "compile_worker", "compiler_output", "extrapolate", "provenance", "study",
             "tpu_compile", "traffic"),
)
MEASURE_CODE = sources(
    "kernels/*.py", *modules("cases", "chips", "device", "measure", "provenance", "statistics", "traffic")
)


def measure_outputs():
    return [
        f"results/measured/{DEVICE.name}-{MEASURE_LABEL}/{experiment}_{dtype}.parquet"
        for experiment, dtype in MEASURE_JOBS
    ]


def study_outputs(target):
    return [
        f"results/estimates/{t}/{experiment}_{dtype}.parquet"
        for t, experiment, dtype in STUDY_JOBS
        if t == target
    ]


from figures.catalog import figure_specs

# The report's own sources: templates, catalogs, the kernels it quotes, its code.
REPORT_SOURCES = sources("report/templates/*", "report/locale/*/LC_MESSAGES/*.po", "report/*.py", "kernels/*.py")
PUBLISHED = sources("data/published_v5e.csv")[0]

FIGURES = figure_specs(config, TARGETS)


wildcard_constraints:
    name="|".join(FIGURES),
    target="|".join(TARGETS),
    experiment="[A-Za-z0-9]+",
    dtype="float32|bfloat16|int8",
    # measurements: this run's device and label only
    device=re.escape(DEVICE.name) if DEVICE else "[^/]+",
    label=re.escape(MEASURE_LABEL),

# Toolchains (experiments/plan/toolchains.py): the pipeline's own runs STUDY_JOBS above; the others
# run in environments of their own (rules/toolchains.smk).
from experiments.plan import toolchains as toolchain_plan

try:
    TOOLCHAINS = toolchain_plan.parse(config)
    TOOLCHAIN_JOBS = toolchain_plan.jobs(config, PUBLISHED)
except (toolchain_plan.ToolchainError, experiment_config.ConfigError) as e:
    raise WorkflowError(str(e)) from None
TOOLCHAIN_NAMES = sorted({t for t, *_ in TOOLCHAIN_JOBS})
TOOLCHAIN_TARGETS = sorted({target for _, target, *_ in TOOLCHAIN_JOBS})
TOOLCHAIN_ESTIMATES = sorted({f"results/toolchains/{t}/estimates/{target}.parquet" for t, target, *_ in TOOLCHAIN_JOBS})
TOOLCHAIN_CODE = sources("kernels/*.py", "experiments/core/*.py", "experiments/compile_study/*.py",
                         "experiments/plan/toolchains.py")
