"""The timing model the advisor uses: constants fitted on the post's published v5e numbers only, and
the half-widths of its prediction intervals (experiments/analysis/intervals.py).

Where from, first found first:
1. a pipeline run's results/timing_model.csv (fit "published v5e") and results/fidelity.csv (the
   leave-one-experiment-out half-widths), when both are there and the latter has the band's columns;
2. the advisor's own cache (<cache>/advise/model-<key>.json), keyed by the published numbers, the
   compiler's versions and the modelling code;
3. fitted here: the post's published configurations compiled for v5e (the compile cache makes this
   one-off), the fit and its cross-validation as the pipeline makes them; then cached as in 2.
"""
import dataclasses
import hashlib
import json
import logging
from pathlib import Path

import pandas as pd

from tpu_matmul_repro.experiments.analysis import intervals
from tpu_matmul_repro.experiments.analysis import timing_model as tm
from tpu_matmul_repro.experiments.core.cache_dirs import cache_folder

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "data" / "published_v5e.csv"
FIT = "published v5e"
CODE = ("experiments/analysis/timing_model.py", "experiments/analysis/intervals.py",
        "experiments/analysis/validation.py", "experiments/core/traffic.py", "experiments/core/chips.py",
        "advise/model.py")


@dataclasses.dataclass(frozen=True)
class Model:
    constants: tm.Constants
    band: intervals.Band
    source: str  # where the constants and band came from, for the output's header


def from_results(results: Path) -> Model | None:
    constants_csv, fidelity_csv = results / "timing_model.csv", results / "fidelity.csv"
    if not (constants_csv.exists() and fidelity_csv.exists()):
        return None
    constants = pd.read_csv(constants_csv)
    constants = constants[constants.fit == FIT].set_index("constant").value
    fidelity = pd.read_csv(fidelity_csv)
    columns = [f"halfwidth{intervals.suffix(level)}" for level in intervals.LEVELS]
    if set(tm.PARAMS) - set(constants.index) or set(columns) - set(fidelity.columns):
        return None
    row = fidelity[(fidelity.validation == intervals.VALIDATION) & (fidelity.scope == "all")]
    if row.empty or row[columns].isna().any(axis=None):
        return None
    row = row.iloc[0]
    band = intervals.Band({level: float(row[c]) for level, c in zip(intervals.LEVELS, columns, strict=True)},
                          int(row.n))
    return Model(tm.Constants(*(float(constants[p]) for p in tm.PARAMS)), band,
                 f"{constants_csv.relative_to(ROOT) if constants_csv.is_relative_to(ROOT) else constants_csv}"
                 " of a pipeline run")


def cache_key(versions: dict) -> str:
    what = dict(published=PUBLISHED.read_text(encoding="utf-8"), versions=versions,
                code={path: (ROOT / path).read_text(encoding="utf-8") for path in CODE})
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


def cached(versions: dict) -> tuple[Model | None, Path | None]:
    folder = cache_folder("advise")
    if folder is None:
        return None, None
    path = folder / f"model-{cache_key(versions)}.json"
    try:
        entry = json.loads(path.read_text())
        band = intervals.Band({float(k): v for k, v in entry["halfwidth"].items()}, entry["n"])
        source = f"fitted on the post's published v5e numbers; from the advisor's cache, {path.name}"
        return Model(tm.Constants(**entry["constants"]), band, source), path
    except (OSError, ValueError, KeyError, TypeError):
        return None, path


def fitted(config: dict) -> Model:
    """Compile the post's configurations for v5e, fit the model on the published numbers, size the band."""
    from tpu_matmul_repro.experiments.analysis.aggregate import combine, load_published
    from tpu_matmul_repro.experiments.compile_study.study import run_jobs
    from tpu_matmul_repro.experiments.core.jobs import Job
    from tpu_matmul_repro.experiments.plan.jobs import published_cases

    section = config["compile_study"]
    jobs = [Job(target="v5e", experiment=experiment, cases=tuple(cases), raise_limits_for=tuple(cases),
                raised_limits_mib=tuple(section["raised_vmem_limits_mib"]), timeout_s=section["timeout_s"],
                profile_max_steps=section["profile_max_steps"])
            for (experiment, _), cases in published_cases(PUBLISHED).items()]
    log.info("fitting the timing model: compiling the post's %d configurations for v5e",
             sum(len(j.cases) for j in jobs))
    df = combine([run_jobs(jobs)], load_published(PUBLISHED))
    points, _ = tm.reference_points(df, source="published", target="v5e")
    fit = tm.fit_published(points)
    band = intervals.band(df)
    return Model(fit.constants, band, f"fitted here on {fit.n_points} of the post's published v5e points")


def load(config: dict, results: Path, versions: dict) -> Model:
    model = from_results(results)
    if model:
        return model
    model, path = cached(versions)
    if model:
        return model
    model = fitted(config)
    if path is not None:
        from tpu_matmul_repro.experiments.core.tables import write_text_atomic

        write_text_atomic(json.dumps(dict(constants=dataclasses.asdict(model.constants),
                                          halfwidth={str(k): v for k, v in model.band.halfwidth.items()},
                                          n=model.band.n), indent=1), path)
    return model
