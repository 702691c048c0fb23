"""The timing model the advisor uses: constants fitted on the post's published v5e numbers only, and
the half-widths of its prediction intervals (analysis/intervals.py).

Where from, first found first:
1. a pipeline run's results/timing_model.csv (fit "published v5e") and results/fidelity.csv (the
   leave-one-experiment-out half-widths). Both are checked at the door as the pipeline would write
   them: the columns, each of the five constants once, a finite value inside the fit's bounds, a
   positive whole n and non-negative half-widths; a file that breaks one is refused in one line
   naming the file, the row, the column and the value. A run that fitted nothing (an empty file, no
   "published v5e" rows, no band) is not refused: the advisor goes on to 2 and says why in its header;
   the pipeline's own advice job never does (the model it ranks with is the run's own);
2. the advisor's own cache (<cache>/advise/model-<key>.json), keyed by the published numbers, the
   compiler's versions and the modelling code;
3. fitted here: the post's published configurations compiled for v5e through the planner's jobs
   (experiments/plan/jobs.published_jobs, the compile cache makes this one-off), the fit and its
   cross-validation as the pipeline makes them (model_columns.fits, intervals.band); then cached.
"""
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
from tpu_matmul_repro.experiments.core import integrity, reading
from tpu_matmul_repro.experiments.core.cache_dirs import cache_folder
from tpu_matmul_repro.experiments.core.chips import POST_CHIP

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "data" / "published_v5e.csv"
FIT = f"published {POST_CHIP}"  # model_columns.PUBLISHED
WITHOUT = " without "  # a refit's name: "published v5e without v4" (model_columns.without)
CODE = ("analysis/timing_model.py", "analysis/intervals.py",
        "analysis/validation.py", "analysis/model_columns.py",
        "experiments/core/traffic.py", "experiments/core/chips.py", "advise/model.py")
CONSTANT_COLUMNS = ("fit", "constant", "value")
BAND_COLUMNS = ("validation", "scope", "group", "n",
                *(f"halfwidth{intervals.suffix(level)}" for level in intervals.LEVELS))


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


def _shown(path: Path) -> str:
    return str(path.relative_to(Path.cwd())) if path.is_absolute() and path.is_relative_to(Path.cwd()) \
        else str(path)


def _read(path: Path) -> pd.DataFrame | None:
    """The CSV at `path`, None when it holds nothing (a run that wrote an empty table)."""
    try:
        text = reading.read_text(_shown(path), "results table")  # the same file, named as shown
    except reading.ReadError as e:
        raise ResultsError(str(e)) from None
    try:
        df = pd.read_csv(io.StringIO(text), keep_default_na=True)
    except pd.errors.EmptyDataError:
        return None
    except (pd.errors.ParserError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ResultsError(f"{_shown(path)}: not a readable CSV table ({first})") from None
    return None if df.empty and not len(df.columns) else df


def _require(path: Path, df: pd.DataFrame, columns) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ResultsError(f"{_shown(path)}: no column {missing[0]!r} (a timing model's table has "
                           f"{', '.join(columns)})")


def _number(path: Path, df: pd.DataFrame, index, column: str, what: str) -> float:
    """The value at (index, column) as a float; ResultsError naming it if it is not a number."""
    raw = df.at[index, column]
    value = pd.to_numeric(pd.Series([raw]), errors="coerce").iloc[0]
    if pd.isna(value) and not pd.isna(raw):
        raise ResultsError(f"{_shown(path)}: row {index + 2}, column {column} ({what}): {raw!r} is not a "
                           "number")
    return float(value)


def constants_from(path: Path) -> tuple[tm.Constants, dict] | str:
    """The published fit's constants and its refits' ({figure: constants}) from a run's
    timing_model.csv, or why the run has none."""
    df = _read(path)
    if df is None or df.empty:
        return f"{_shown(path)} is empty: that run fitted no timing model"
    _require(path, df, CONSTANT_COLUMNS)
    fits = df.fit.astype(str)
    if not (fits == FIT).any():
        return f"{_shown(path)} has no {FIT!r} fit: that run had too few of the post's configurations to fit"
    found = {}
    for name in dict.fromkeys(fits[(fits == FIT) | fits.str.startswith(FIT + WITHOUT)]):
        found[name] = _constants(path, df, df[fits == name], name)
    return found.pop(FIT), {name.removeprefix(FIT + WITHOUT): k for name, k in found.items()}


def _constants(path: Path, df: pd.DataFrame, mine: pd.DataFrame, fit: str) -> tm.Constants:
    """One fit's five constants, each once, each finite and inside the fit's bounds."""
    values = {}
    for index, row in mine.iterrows():
        name = row.constant
        if name not in tm.PARAMS:
            raise ResultsError(f"{_shown(path)}: row {index + 2}, column constant: {name!r} is not one of "
                               f"the model's constants ({', '.join(tm.PARAMS)})")
        if name in values:
            raise ResultsError(f"{_shown(path)}: row {index + 2}: constant {name} of fit {fit!r} appears "
                               "twice")
        value = _number(path, df, index, "value", f"{fit}, {name}")
        lo, hi = tm.LOWER[tm.PARAMS.index(name)], tm.UPPER[tm.PARAMS.index(name)]
        if not math.isfinite(value):
            raise ResultsError(f"{_shown(path)}: row {index + 2}, column value ({fit}, {name}): {value} is "
                               "not a finite number")
        if not lo <= value <= hi:
            raise ResultsError(f"{_shown(path)}: row {index + 2}, column value ({fit}, {name}): {value:g} is "
                               f"outside the fit's bounds [{lo:g}, {hi:g}]")
        values[name] = value
    missing = [p for p in tm.PARAMS if p not in values]
    if missing:
        raise ResultsError(f"{_shown(path)}: fit {fit!r} has no row for constant {missing[0]}")
    return tm.Constants(**values)


def band_from(path: Path) -> intervals.Band | str:
    """The leave-one-experiment-out band from a run's fidelity.csv (its size bands' half-widths
    beside the overall one: intervals.Band.from_fidelity), or why the run has none."""
    df = _read(path)
    if df is None or df.empty:
        return f"{_shown(path)} is empty: that run did not validate a fit"
    _require(path, df, BAND_COLUMNS)
    rows = df[df.validation.astype(str) == intervals.VALIDATION]
    overall = rows[rows.scope.astype(str) == "all"]
    if overall.empty:
        return f"{_shown(path)} has no {intervals.VALIDATION!r} row: that run could not size the band"
    index = overall.index[0]
    most = published_points()
    n = _number(path, df, index, "n", intervals.VALIDATION)
    if not (math.isfinite(n) and 1 <= n <= most and n.is_integer()):
        raise ResultsError(f"{_shown(path)}: row {index + 2}, column n: {n:g} is not a whole number of "
                           f"points from 1 to {most}, the post's published points")
    widths = {}
    for row in [index, *rows.index[rows.scope.astype(str) == "size band"]]:
        points = _number(path, df, row, "n", intervals.VALIDATION)
        if row != index and not (math.isfinite(points) and 0 <= points <= n and points.is_integer()):
            raise ResultsError(f"{_shown(path)}: row {row + 2}, column n: {points:g} is not a whole number "
                               f"of points from 0 to {n:g}, the band's")
        found = {}
        for level in intervals.LEVELS:
            column = f"halfwidth{intervals.suffix(level)}"
            q = _number(path, df, row, column, intervals.VALIDATION)
            if q < 0:
                raise ResultsError(f"{_shown(path)}: row {row + 2}, column {column}: {q:g} is negative (a "
                                   "half-width in ln is |ln(modelled / published)|, never below 0)")
            if intervals.MAX_HALFWIDTH < q < math.inf:
                raise ResultsError(f"{_shown(path)}: row {row + 2}, column {column}: {q:g} is more than "
                                   f"{intervals.MAX_HALFWIDTH:.4g} (ln 10, a factor of ten either way), the "
                                   "widest band a fit of the post's points gives")
            if math.isnan(q) and row != index and points == 0:
                continue  # a size band without points: the widest band's (below)
            if not math.isfinite(q):
                return f"{_shown(path)}: the run's {column} (row {row + 2}) is {q}: too few points for it"
            found[level] = q
        widths[row] = found
    overall = widths.pop(index)
    # a size band without points takes the widest band's half-width, the overall one (one rule:
    # intervals.empty_bands_widest)
    by_size = intervals.empty_bands_widest(
        {str(df.at[row, "group"]): {level: found.get(level, math.nan) for level in intervals.LEVELS}
         for row, found in widths.items()}, overall)
    return intervals.Band(overall, int(n), by_size)


def from_results(results: Path) -> tuple[Model | None, str]:
    """The run's model, or None and why not; ResultsError for a file there that is wrong."""
    results = Path(results)
    constants_csv, fidelity_csv = results / "timing_model.csv", results / "fidelity.csv"
    for path in (constants_csv, fidelity_csv):
        if not path.exists():
            return None, f"no {_shown(path)}"
    fits = constants_from(constants_csv)  # both files are checked before either is used
    band = band_from(fidelity_csv)
    for found in (fits, band):
        if isinstance(found, str):
            return None, found
    constants, refits = fits
    return Model(constants, band, f"{_shown(constants_csv)} of a pipeline run", refits), ""


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
    """Compile the post's configurations for v5e (the planner's jobs), fit the model on the published
    numbers and size the band, with the pipeline's own functions."""
    from tpu_matmul_repro.analysis import model_columns
    from tpu_matmul_repro.analysis.aggregate import combine, load_published
    from tpu_matmul_repro.experiments.compile_study.study import run_jobs
    from tpu_matmul_repro.experiments.plan.jobs import published_jobs

    jobs = list(published_jobs(config, PUBLISHED).values())
    log.info("fitting the timing model: compiling the post's %d configurations for %s",
             sum(len(j.cases) for j in jobs), POST_CHIP)
    df = combine([run_jobs(jobs)], load_published(PUBLISHED))
    fits = model_columns.fits(df)
    band = intervals.band(df)
    if FIT not in fits or band is None:
        raise AdviceError("the post's published configurations did not compile into enough points to fit "
                          "the timing model (see the compile log with -v)")
    fit = fits[FIT][0]
    refits = {name.removeprefix(FIT + WITHOUT): f.constants for name, (f, _) in fits.items()
              if name.startswith(FIT + WITHOUT)}
    return Model(fit.constants, band,
                 f"fitted here on {fit.n_points} of the post's published {POST_CHIP} points", refits)


def load(config: dict, results: Path | None, versions: dict, *, fallback: bool = True) -> Model:
    """The model: the run's (results/), else the cache's, else fitted here. With fallback False
    (the pipeline's advice job), only the run's own, and AdviceError in one line if it has none."""
    why = "--results none"
    if results is not None:
        model, why = from_results(results)
        if model:
            return model
    if not fallback:
        raise AdviceError(f"the run's timing model is missing: {why}")
    model, path = cached(versions)
    if not model:
        model = fitted(config)
        if path is not None:
            from tpu_matmul_repro.experiments.core.tables import write_text_atomic

            entry = dict(constants=dataclasses.asdict(model.constants), n=model.band.n,
                         halfwidth={str(k): v for k, v in model.band.halfwidth.items()},
                         by_size={size: {str(k): v for k, v in widths.items()}
                                  for size, widths in model.band.by_size.items()},
                         refits={figure: dataclasses.asdict(k) for figure, k in model.refits.items()})
            write_text_atomic(integrity.sealed(entry, indent=1), path)
    return dataclasses.replace(model, source=f"{model.source} ({why})")
