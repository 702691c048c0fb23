# Shared set-up: check the config, plan every job (experiments/plan/plan.py), and derive each stage's
# code digest. Rules read the plan; none re-derives it.
import hashlib
import os
import re
from pathlib import Path


from tpu_matmul_repro.experiments.core import code_inputs, codec
from tpu_matmul_repro.experiments.measure import device as measure_device
from tpu_matmul_repro.experiments.plan.config import ConfigError, checked
from tpu_matmul_repro.experiments.plan.job_lists import MERGED_BASELINE_DTYPE, expected_work
from tpu_matmul_repro.experiments.plan.plan import make_plan
from tpu_matmul_repro.kernels.checks import DTYPES

REPO = Path(workflow.basedir)

# The config, after any --configfile or --config, checked once (experiments/plan/config.py), then planned.
try:
    CHECKED = checked(config)
    # Real measurements: on a TPU host (or the CPU, on request); none elsewhere (experiments/measure/device.py).
    DEVICE = measure_device.detect(CHECKED["measure"]["device"])
    MEASURE_LABEL = CHECKED["measure"]["label"] or measure_device.host_label()
    # carried measurements: data/measured/*.parquet of the working directory (README)
    PLAN = make_plan(
        CHECKED,
        device=DEVICE,
        label=MEASURE_LABEL,
        imported=Path("data/measured").glob("*.parquet"),
        published=REPO / "data" / "published_v5e.csv",
    )
except ConfigError as e:
    raise WorkflowError(str(e)) from None
_requested = CHECKED["measure"]["device"]
config.update(CHECKED)  # the one change to the config: the schema's defaults, which every job sees

if DEVICE is None:
    logger.info(
        (
            "measure.device=off: this run"
            if _requested == "off"
            else "No TPU found (measure.device=%s): this run" % _requested
        )
        + " compiles and estimates; it measures nothing: every TFLOP/s it reports is estimated by libtpu,"
        " modelled from those estimates, or the post's published number."
    )
else:
    logger.info(
        "Measuring on %s (%s, %d chips) as %s"
        % (DEVICE.name, DEVICE.device_kind, DEVICE.num_chips, PLAN.measured_file)
    )

CORRECTNESS_KERNELS = list(PLAN.correctness)
TARGETS = PLAN.targets
MEASURED = [PLAN.measured_file] if DEVICE else []
IMPORTED = list(PLAN.imported)


def code_digest(script, *data_globs, modules=()):
    """The `code` param of a rule: a digest of its script's (and `modules`') import closure and the data
    files it reads (experiments/core/code_inputs.py)."""
    return code_inputs.code_digest(script, *data_globs, root=REPO, modules=tuple(modules))


def measure_outputs():
    return [
        f"results/measured/{DEVICE.name}-{MEASURE_LABEL}/{experiment}_{dtype}.parquet"
        for experiment, dtype in PLAN.measure
    ]


def compile_outputs(target):
    return [
        f"results/estimates/{t}/{experiment}_{dtype}.{part}.parquet"
        for t, experiment, dtype, part in PLAN.compile_jobs
        if t == target
    ]


from tpu_matmul_repro.experiments.plan.studies import load as load_studies
from tpu_matmul_repro.figures.figure_specs import (
    FORMATS as FIGURE_FORMATS,
    LANGUAGES,
    NARROW_KINDS,
    figure_specs,
    narrow_stem,
    stem,
)

# the run's studies add the figures a config yields of their kinds (their specs.py; no drawing code)
load_studies(config["studies"], modules=("specs",))


def study_modules(*kinds):
    """The run's studies' modules of these kinds (specs, figure, section): imported by name, so no
    import closure finds them, yet part of the code of the stages they add to."""
    return [
        f"studies/{name}/{kind}.py"
        for name in config["studies"]
        for kind in kinds
        if (REPO / "studies" / name / f"{kind}.py").exists()
    ]


STUDY_TEMPLATES = [f"studies/{name}/templates/*" for name in config["studies"]]
STUDY_CATALOGS = [f"studies/{name}/locale/*/LC_MESSAGES/*.po" for name in config["studies"]]

# The post's numbers, shipped with the workflow: relative, so a moved checkout reruns nothing; local()
# because with remote storage every job has the workflow's own files.
PUBLISHED = local(os.path.relpath(REPO / "data" / "published_v5e.csv"))
CITATION = local(os.path.relpath(REPO / "CITATION.cff"))  # copied into results/ by the gallery

FIGURES = figure_specs(config, TARGETS)
# Every figure's PNG in every language, shown by the gallery and the reports; a kind of NARROW_KINDS has a
# phone's variant too (<stem>.narrow.png).
FIGURE_PNGS = [f"{stem('results/figures', name, lang)}.png" for name in FIGURES for lang in LANGUAGES] + [
    f"{narrow_stem('results/figures', name, lang)}.png"
    for name, (kind, _) in FIGURES.items()
    if kind in NARROW_KINDS
    for lang in LANGUAGES
]
FIGURE_FILES = [
    f"{stem('results/figures', name, lang)}.{ext}"
    for name in FIGURES
    for lang in LANGUAGES
    for ext in FIGURE_FORMATS
] + [path for path in FIGURE_PNGS if path.endswith(".narrow.png")]

# Block-size advice (rules/advice.smk): one job per shape of advice.shapes, named "<m>x<k>x<n>".
ADVICE = {"x".join(str(d) for d in shape): shape for shape in config["advice"]["shapes"]}


def advice_figures(shape, formats=FIGURE_FORMATS):
    """A shape's advice figure in every language and format (figures/advice_figure.py)."""
    return [f"{stem('results/advice', shape, lang)}.{ext}" for lang in LANGUAGES for ext in formats] + [
        f"{narrow_stem('results/advice', shape, lang)}.png" for lang in LANGUAGES
    ]


ADVICE_TABLES = [f"results/advice/{shape}.csv" for shape in ADVICE]
ADVICE_PNGS = [path for shape in ADVICE for path in advice_figures(shape, ["png"])]
ADVICE_FILES = ADVICE_TABLES + [path for shape in ADVICE for path in advice_figures(shape)]


def advice_request(shape):
    section = config["advice"]
    return dict(
        shape=shape,
        dtype=section["dtype"],
        kernel=section["kernel"],
        targets=list(section.get("targets") or [t for t in TARGETS if t != "v4"]),
        vmem_limit_mib=section["vmem_limit_mib"],
    )


# Snakemake's own report (`snakemake --report report.zip`) shows each figure's English PNG, by kind.
def reported(path):
    name = Path(path).stem
    if path.endswith(".png") and name in FIGURES:
        kind = FIGURES[name][0]
        return report(
            path,
            caption="../report/captions/figure.rst",
            category="Figures",
            subcategory=kind,
            labels={"figure": name, "kind": kind},
        )
    return path


def reported_table(name):
    """results/<name>.csv, shown under Tables in Snakemake's own report with its caption."""
    caption = f"../report/captions/{name}.rst"
    return report(f"results/{name}.csv", caption=caption, category="Tables", labels={"table": f"{name}.csv"})


wildcard_constraints:
    kernel="|".join(CORRECTNESS_KERNELS),
    target="|".join(TARGETS),
    experiment="[A-Za-z0-9]+",
    dtype="|".join(DTYPES),
    part="[0-9]+of[0-9]+",
    # measurements: this run's device and label only
    device=re.escape(DEVICE.name) if DEVICE else "[^/]+",
    label=re.escape(MEASURE_LABEL),


# Toolchains: the pipeline's own runs PLAN.compile_jobs; the others, environments of their own.
from tpu_matmul_repro.experiments.plan import toolchains as toolchain_plan

TOOLCHAINS = PLAN.toolchains
TOOLCHAIN_JOBS = PLAN.toolchain_jobs
TOOLCHAIN_BATCHES = PLAN.toolchain_batches  # (toolchain, target, batch) -> Jobs of one Snakemake job
TOOLCHAIN_NAMES = sorted({t for t, *_ in TOOLCHAIN_JOBS})
TOOLCHAIN_TARGETS = sorted({target for _, target, *_ in TOOLCHAIN_JOBS})
TOOLCHAIN_ESTIMATES = sorted(
    {f"results/toolchains/{t}/estimates/{target}.parquet" for t, target, *_ in TOOLCHAIN_JOBS}
)


def batch_work(key):
    """The compile work (expected_work) of a toolchain's Snakemake job: its priority."""
    return sum(map(expected_work, TOOLCHAIN_BATCHES[key]))


def toolchain_work(toolchain):
    """A toolchain's compile work, all its jobs: its environment's priority."""
    return sum(batch_work(key) for key in TOOLCHAIN_BATCHES if key[0] == toolchain)


# Public TPU matmul measurements, on which the timing model is scored, never fitted: a bad file stops
# the run here, in one line; a run whose model has nothing to fit compiles nothing for them.
from tpu_matmul_repro.advise.pipeline import missing_fit
from tpu_matmul_repro.analysis import public_validation
from tpu_matmul_repro.analysis.public_measurements import PublicDataError
from tpu_matmul_repro.analysis.public_measurements import load as load_public

PUBLIC_DATA = local(os.path.relpath(REPO / "data" / "public_measurements.csv"))
PUBLIC_JOBS = {}  # generation -> its compile Job
PUBLIC_FILES = []  # what `all` builds for them
if config["validation"]["public_measurements"]:
    try:
        _public = load_public(PUBLIC_DATA)
    except PublicDataError as e:
        raise WorkflowError(str(e)) from None
    if not missing_fit(PLAN, PUBLISHED):
        # the generations this run models: the generations study scores every one
        PUBLIC_JOBS = {
            generation: job
            for generation, job in public_validation.compile_jobs(
                _public,
                timeout_s=config["compile_study"]["timeout_s"],
                toolchain=toolchain_plan.primary(config),
            ).items()
            if generation in TARGETS
        }
    PUBLIC_FILES = ["results/public_scores.csv", "results/public/fidelity.csv"]
