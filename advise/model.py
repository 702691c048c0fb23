"""The timing model the advisor uses, first found first: a pipeline run's results/timing_model.json
(checked at the door), the advisor's own cache, or fitted here from the post's configurations by the
pipeline's own function (docs/advisor.md, "Where the model comes from")."""
import dataclasses
import functools
import hashlib
import io
import json
import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd

from tpu_matmul_repro.advise.request import AdviceError
from tpu_matmul_repro.analysis import intervals
from tpu_matmul_repro.analysis import timing_model as tm
from tpu_matmul_repro.analysis.fitted_model import PUBLISHED as FIT
from tpu_matmul_repro.analysis.fitted_model import FittedModel, ModelFileError, fit_model
from tpu_matmul_repro.experiments.core import integrity, reading
from tpu_matmul_repro.experiments.core.cache_dirs import cache_folder
from tpu_matmul_repro.experiments.core.chips import POST_CHIP

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "data" / "published_v5e.csv"
CODE = ("analysis/timing_model.py", "analysis/intervals.py", "analysis/fitted_model.py",
        "analysis/validation.py", "analysis/model_columns.py",
        "experiments/core/traffic.py", "experiments/core/chips.py", "advise/model.py")


class ResultsError(AdviceError):
    """A results/ file that is there but cannot be a pipeline's: one line naming file, row, column, value."""


@dataclasses.dataclass(frozen=True)
class Model:
    constants: tm.Constants  # the fit on every published point
    band: intervals.Band
    source: str  # where the constants and band came from, for the output's header
    # the refits without each of the post's figures ({figure: constants}): how far they move a
    # prediction widens its band (intervals.add_columns' spread), as in the compile study's table
    refits: dict = dataclasses.field(default_factory=dict)
    # target -> PublicScores of the run's results/public_scores.csv (the same run's model); empty: none
    public: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class PublicScores:
    """One generation's public measurements as the run's model scored them (never fitted on)."""

    n: int
    median_abs_log_ratio: float
    coverage80: float  # of the band before the public floor (the pipeline's)
    shapes: int  # shapes where one source measured several configurations the model predicts
    pallas_picks_vs_xla: int  # shapes where the model picked a block among measured ones, XLA measured too
    losses_to_xla: int  # of those, where the measured XLA was faster
    path: str


def with_public(model: Model, results: Path) -> Model:
    """The run's model with its public scores where the run has them (the band's floor off v5e, the
    header's numbers); ResultsError for a file that cannot be a run's."""
    from tpu_matmul_repro.analysis import public_regret

    path = Path(results) / "public_scores.csv"
    if not path.exists():
        return model
    try:
        scores = public_regret.read(path)
    except public_regret.ScoresError as e:
        raise ResultsError(str(e).replace(str(path), _shown(path), 1)) from None
    summary = public_regret.by_generation(scores)
    public = {r.generation: PublicScores(int(r.n), float(r.median_abs_log_ratio), float(r.coverage80),
                                         int(r.shapes), int(r.pallas_picks_vs_xla), int(r.losses_to_xla),
                                         _shown(path))
              for r in summary.itertuples()}
    band = dataclasses.replace(model.band, public=intervals.public_halfwidths(scores))
    return dataclasses.replace(model, band=band, public=public)


def _shown(path: Path) -> str:
    return str(path.relative_to(Path.cwd())) if path.is_absolute() and path.is_relative_to(Path.cwd()) \
        else str(path)


def _model_of(fitted: FittedModel, source: str) -> tuple[Model | None, str]:
    """The advisor's Model of a run's fits, or None and why the run has none."""
    if fitted.published is None:
        return None, f"{source} has no {FIT!r} fit: that run had too few of the post's configurations to fit"
    band = fitted.band
    if band is None:
        return None, f"{source} has no band: that run could not cross-validate its fit"
    widths = [*band.halfwidth.values(), *(q for w in band.by_size.values() for q in w.values())]
    if not all(math.isfinite(q) for q in widths):
        return None, f"{source}: the run's band is infinite at a level: too few points for it"
    refits = {figure: fit.constants for figure, fit in fitted.refits().items()}
    return Model(fitted.published.constants, band, source, refits), ""


def from_results(results: Path, public: bool = True) -> tuple[Model | None, str]:
    """The run's model, or None and why not; ResultsError for a file there that no run wrote."""
    path = Path(results) / "timing_model.json"
    if not path.exists():
        return None, f"no {_shown(path)}"
    try:
        fitted = FittedModel.read(path)
    except ModelFileError as e:
        raise ResultsError(str(e).replace(str(path), _shown(path), 1)) from None
    band = fitted.band
    if band is not None:
        if band.n > published_points():
            raise ResultsError(f"{_shown(path)}: band.n: {band.n} is more than the post's "
                               f"{published_points()} published points")
        for size, widths in {"halfwidth": band.halfwidth, **band.by_size}.items():
            for level, q in widths.items():
                if intervals.MAX_HALFWIDTH < q < math.inf:
                    raise ResultsError(
                        f"{_shown(path)}: band {size} {level}: {q:g} is more than "
                        f"{intervals.MAX_HALFWIDTH:.4g} (ln 10, a factor of ten either way), the widest band "
                        "a fit of the post's points gives")
    model, why = _model_of(fitted, f"{_shown(path)} of a pipeline run")
    return (with_public(model, results) if model and public else model), why


@functools.cache
def published_points() -> int:
    """How many points the post published (data/published_v5e.csv): the most a band is sized on."""
    return len(pd.read_csv(io.StringIO(reading.read_text(PUBLISHED, "results table")), comment="#"))


def cache_key(versions: dict) -> str:
    what = dict(published=PUBLISHED.read_text(encoding="utf-8"), versions=versions,
                code={path: (ROOT / path).read_text(encoding="utf-8") for path in CODE})
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


def cached(versions: dict) -> tuple[Model | None, Path | None]:
    folder = cache_folder("advise")
    if folder is None:
        return None, None
    path = folder / f"model-{cache_key(versions)}.json"
    if not path.exists():
        return None, path
    try:
        entry = integrity.unsealed(reading.read_text(path, "cache entry"))
        band = intervals.Band({float(k): float(v) for k, v in entry["halfwidth"].items()}, int(entry["n"]),
                              {size: {float(k): float(v) for k, v in widths.items()}
                               for size, widths in entry["by_size"].items()})
        constants = _checked(entry["constants"])
        refits = {figure: _checked(values) for figure, values in entry["refits"].items()}
        widths = [*band.halfwidth.values(), *(q for w in band.by_size.values() for q in w.values())]
        if not all(0 <= q <= intervals.MAX_HALFWIDTH for q in widths):
            raise ValueError("a half-width that no band has")
        if not 1 <= band.n <= published_points():
            raise ValueError(f"n={band.n}, not a count of the post's published points")
        source = f"fitted on the post's published {POST_CHIP} numbers; from the advisor's cache, {path.name}"
        return Model(constants, band, source, refits), path
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        log.warning("the advisor's cache: %s is damaged (%s); fitting the model again", path, e)
        return None, path


def _checked(values: dict) -> tm.Constants:
    """A cached fit's constants, refused (ValueError) outside the fit's bounds."""
    constants = tm.Constants(**{p: float(values[p]) for p in tm.PARAMS})
    vector = constants.vector()
    if not (np.all(np.isfinite(vector)) and np.all(vector >= tm.LOWER) and np.all(vector <= tm.UPPER)):
        raise ValueError("outside the fit's bounds")
    return constants


def fitted(config: dict) -> Model:
    """Compile the post's configurations for v5e and fit the model with the pipeline's own function."""
    from tpu_matmul_repro.analysis.aggregate import combine, load_published
    from tpu_matmul_repro.experiments.compile_study.study import run_jobs
    from tpu_matmul_repro.experiments.plan.job_lists import published_jobs

    jobs = list(published_jobs(config, PUBLISHED).values())
    log.info("fitting the timing model: compiling the post's %d configurations for %s",
             sum(len(j.cases) for j in jobs), POST_CHIP)
    fitted = fit_model(combine([run_jobs(jobs)], load_published(PUBLISHED)))
    n = fitted.published.n_points if fitted.published else 0
    model, _ = _model_of(fitted, f"fitted here on {n} of the post's published {POST_CHIP} points")
    if model is None:
        raise AdviceError("the post's published configurations did not compile into enough points to fit "
                          "the timing model (see the compile log with -v)")
    return model


def fits_here(results: Path | None, versions: dict) -> bool:
    """Whether load() will fit the model (minutes): no run's model and none in the advisor's cache."""
    if results is not None and from_results(results)[0] is not None:
        return False
    return cached(versions)[0] is None


def load(config: dict, results: Path | None, versions: dict, *, fallback: bool = True,
         absent: str = "--results none", public: bool = True) -> Model:
    """The model: the run's (results/), else the cache's, else fitted here; with fallback False only the
    run's own. `absent`: why there is no run's model, for the header; `public`: read its public scores."""
    why = absent
    if results is not None:
        model, why = from_results(results, public)
        if model:
            return model
    if not fallback:
        raise AdviceError(f"the run's timing model is missing: {why}")
    model, path = cached(versions)
    if not model:
        model = fitted(config)
        if path is not None:
            from tpu_matmul_repro.experiments.core.atomic_write import write_text_atomic

            entry = dict(constants=dataclasses.asdict(model.constants), n=model.band.n,
                         halfwidth={str(k): v for k, v in model.band.halfwidth.items()},
                         by_size={size: {str(k): v for k, v in widths.items()}
                                  for size, widths in model.band.by_size.items()},
                         refits={figure: dataclasses.asdict(k) for figure, k in model.refits.items()})
            try:
                write_text_atomic(integrity.sealed(entry, indent=1), path)
            except OSError as e:  # a full disk, a read-only cache: the answer stands without the cache
                log.warning("the advisor's cache could not keep the fitted model (%s: %s); answering "
                            "without it, the next call fits it again", path, e.strerror or e)
    return dataclasses.replace(model, source=f"{model.source} ({why})")
