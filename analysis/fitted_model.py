"""The timing model fitted once per run (by the aggregate): the published fit, its refits without
each figure and each size, each target's measured fit and the band, written to and read back from
results/timing_model.json; only the ablation fits again."""
import dataclasses
import json
import math

import pandas as pd

from tpu_matmul_repro.analysis import intervals, validation
from tpu_matmul_repro.analysis import timing_model as tm
from tpu_matmul_repro.analysis.runs import latest_labels
from tpu_matmul_repro.experiments.core.chips import CHIPS, POST_CHIP

PUBLISHED = f"published {POST_CHIP}"
WITHOUT = " without "


def without(experiment: str) -> str:
    """The name of the fit that left one of the post's figures out."""
    return f"{PUBLISHED}{WITHOUT}{experiment}"


def is_refit(name: str) -> bool:
    return name.startswith(PUBLISHED + WITHOUT)


class ModelFileError(ValueError):
    """A timing_model.json that no run wrote: one line naming the file, the key and the value."""


@dataclasses.dataclass
class FittedModel:
    """Every fit of one run and the band; `unfitted` and `not_validated` say why one is missing."""

    fits: dict  # name -> (Fit, fitted on): PUBLISHED, its refits without(figure), "measured <target> <run>"
    band: intervals.Band | None = None
    size_refits: dict = dataclasses.field(default_factory=dict)  # str(size) -> Fit, leaving that size out
    unfitted: str = ""  # why the published points gave no fit ("" where they did or where there are none)
    not_validated: dict = dataclasses.field(default_factory=dict)  # scheme -> why it has no refits

    @property
    def published(self) -> "tm.Fit | None":
        return self.fits[PUBLISHED][0] if PUBLISHED in self.fits else None

    def refits(self, column: str = "experiment") -> dict:
        """{held-out value as text: fit without it}, for one cross-validation (its column)."""
        if column == "m":
            return self.size_refits
        return {name.split(WITHOUT, 1)[1]: fit for name, (fit, _) in self.fits.items() if is_refit(name)}

    def held_out(self, points: pd.DataFrame, column: str = "experiment") -> pd.DataFrame | None:
        """validation.cross_validate's predictions from the refits made once; None without them."""
        refits = self.refits(column)
        if not refits or not len(points):
            return None
        parts = [tm.predict(points[points[column] == value], refits[str(value)].constants)
                 .assign(fold=str(value))
                 for value in sorted(points[column].unique(), key=str) if str(value) in refits]
        return pd.concat(parts).sort_index() if parts else None

    def write(self, path) -> None:
        from tpu_matmul_repro.experiments.core.atomic_write import write_text_atomic

        b = self.band
        band = None if b is None else dict(n=b.n, halfwidth=_levels(b.halfwidth),
                                           by_size={s: _levels(w) for s, w in b.by_size.items()},
                                           nested={f: {str(level): w for level, w in widths.items()}
                                                   for f, widths in b.nested.items()})
        fits = {name: dict(_fit_entry(fit), fitted_on=on) for name, (fit, on) in self.fits.items()}
        entry = dict(fits=fits,
                     size_refits={size: _fit_entry(fit) for size, fit in self.size_refits.items()},
                     band=band, unfitted=self.unfitted, not_validated=self.not_validated)
        write_text_atomic(json.dumps(entry, indent=1) + "\n", path)

    @classmethod
    def read(cls, path) -> "FittedModel":
        """The file a run wrote; ModelFileError in one line for one that no run wrote."""
        from tpu_matmul_repro.experiments.core import reading

        try:  # bounded: a results file of any size or kind is one line, not a hang or a crash
            entry = json.loads(reading.read_text(path, "results table"))
        except reading.ReadError as e:
            raise ModelFileError(str(e)) from None
        except (ValueError, RecursionError) as e:
            raise ModelFileError(f"{path}: not a JSON file ({str(e).splitlines()[0]})") from None
        where = _Where(path)
        fits = {name: (_fit_of(where, f"fits.{name}", value),
                       where.text(value.get("fitted_on"), f"fits.{name}.fitted_on"))
                for name, value in where.mapping(entry, "fits").items()}
        sizes = {size: _fit_of(where, f"size_refits.{size}", value)
                 for size, value in where.mapping(entry, "size_refits").items()}
        band = entry.get("band") if isinstance(entry, dict) else None
        why = {k: where.text(v, f"not_validated.{k}")
               for k, v in where.mapping(entry, "not_validated").items()}
        return cls(fits, None if band is None else _band_of(where, band), sizes,
                   where.text(entry.get("unfitted", ""), "unfitted"), why)


def fit_model(df: pd.DataFrame) -> FittedModel:
    """Every fit the table allows, made here once: the post's published points, their refits without
    each figure and each size, and each target's latest measured run with enough points."""
    fits, size_refits, not_validated, unfitted, band = {}, {}, {}, "", None
    points, _ = tm.reference_points(df, source="published", target=POST_CHIP)
    if len(points):
        try:
            fits[PUBLISHED] = (tm.fit_published(points), "published")
        except tm.TooFewPoints as e:
            unfitted = str(e)
    if PUBLISHED in fits:
        for scheme, column in validation.SCHEMES.items():
            try:
                made = validation.fold_fits(points, column)
            except tm.TooFewPoints as e:  # a fold too small to fit: no refits of this scheme
                not_validated[scheme] = str(e)
                continue
            for value, (fit, _) in made.items():
                if column == "m":
                    size_refits[str(value)] = fit
                else:
                    fits[without(value)] = (fit, "published")
        model = FittedModel(fits, size_refits=size_refits)
        predicted = model.held_out(points)
        if predicted is not None:
            band = intervals.band_of(validation.held_out_errors(points.loc[predicted.index],
                                                                predicted.model_post_seconds),
                                     validation.nested_halfwidths(points))
    latest = latest_labels(df[df.source == "measured"]).sort_values(["target", "run_label"])
    for target, label in latest.itertuples(index=False):
        if target not in CHIPS:
            continue
        points, _ = tm.reference_points(df, source="measured", target=target, run_label=label)
        try:
            fits[f"measured {target} {label}"] = (tm.fit_measured(points), "measured")
        except tm.TooFewPoints:
            continue
    return FittedModel(fits, band, size_refits, unfitted, not_validated)


def constants_table(model: FittedModel) -> pd.DataFrame:
    """One row per fit and constant (results/timing_model.csv)."""
    rows = []
    for name, (fit, source) in model.fits.items():
        for p, lo, hi in zip(tm.PARAMS, tm.LOWER, tm.UPPER, strict=True):
            rows.append(dict(fit=name, fitted_on=source, constant=p, value=getattr(fit.constants, p),
                             std_error=getattr(fit.std_errors, p), unit=tm.UNITS[p], lower=lo, upper=hi,
                             at_bound=p in fit.at_bound, n_points=fit.n_points,
                             rms_log_error=fit.rms_log_error))
    return pd.DataFrame(rows)


# --- the file ------------------------------------------------------------------------------------

def _fit_entry(fit: "tm.Fit") -> dict:
    return dict(constants=dataclasses.asdict(fit.constants), std_errors=dataclasses.asdict(fit.std_errors),
                n_points=fit.n_points, rms_log_error=fit.rms_log_error, at_bound=list(fit.at_bound))


def _levels(widths: dict) -> dict:
    return {str(level): q for level, q in widths.items()}


class _Where:
    """Checks of one file's values, each failure a ModelFileError naming the file and the key."""

    def __init__(self, path):
        self.path = path

    def fail(self, key: str, value, why: str):
        raise ModelFileError(f"{self.path}: {key}: {value!r} {why}")

    def mapping(self, entry, key: str) -> dict:
        """entry[last part of key] (default {}), an object."""
        if not isinstance(entry, dict):
            self.fail(key.rsplit(".", 1)[0] if "." in key else "(top level)", entry, "is not an object")
        value = entry.get(key.rsplit(".", 1)[-1], {})
        return value if isinstance(value, dict) else self.fail(key, value, "is not an object")

    def text(self, value, key: str) -> str:
        return value if isinstance(value, str) else self.fail(key, value, "is not text")

    def number(self, value, key: str, lo=-math.inf, hi=math.inf, finite=True) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(key, value, "is not a number")
        if finite and not math.isfinite(value):
            self.fail(key, value, "is not a finite number")
        if not lo <= value <= hi:
            self.fail(key, value, f"is outside [{lo:g}, {hi:g}]")
        return float(value)


def _fit_of(where: _Where, key: str, entry) -> "tm.Fit":
    """A fit: each of the model's constants inside the fit's bounds, every value a number."""
    found = {}
    for part in ("constants", "std_errors"):
        given = where.mapping(entry, f"{key}.{part}")
        missing = [p for p in tm.PARAMS if p not in given]
        if missing:
            where.fail(f"{key}.{part}", sorted(given), f"has no {missing[0]}")
        for name in set(given) - {*tm.PARAMS, *tm.EXTRA}:
            where.fail(f"{key}.{part}", name, "is not one of the model's constants")
        bounds = {p: (lo, hi) for p, lo, hi in zip(tm.PARAMS, tm.LOWER, tm.UPPER, strict=True)}
        bounds |= {p: (lo, hi) for p, (lo, hi, _) in tm.EXTRA.items()}
        found[part] = tm.Constants(**{
            p: where.number(v, f"{key}.{part}.{p}", *bounds[p]) if part == "constants" and p in bounds
            else where.number(v, f"{key}.{part}.{p}", finite=False)
            for p, v in given.items()})
    n = where.number(entry.get("n_points"), f"{key}.n_points", 1)
    if not n.is_integer():
        where.fail(f"{key}.n_points", n, "is not a whole number")
    bound = entry.get("at_bound", [])
    if not isinstance(bound, list) or not all(isinstance(b, str) for b in bound):
        where.fail(f"{key}.at_bound", bound, "is not a list of names")
    return tm.Fit(found["constants"], found["std_errors"], int(n),
                  where.number(entry.get("rms_log_error"), f"{key}.rms_log_error", 0), tuple(bound))


def _band_of(where: _Where, entry) -> intervals.Band:
    """The band: a whole n from 1, half-widths in ln never below 0 (|ln(modelled / published)|)."""
    if not isinstance(entry, dict):
        where.fail("band", entry, "is not an object")
    n = where.number(entry.get("n"), "band.n", 1)
    if not n.is_integer():
        where.fail("band.n", n, "is not a whole number of points")

    def widths(given: dict, key: str) -> dict:
        return {float(level): where.number(q, f"{key}.{level}", 0, finite=False)
                for level, q in given.items()}

    by_size = {}
    for size in where.mapping(entry, "band.by_size"):
        key = f"band.by_size.{size}"
        by_size[size] = widths(where.mapping(entry["by_size"], key), key)
    nested = {}
    for figure, levels in where.mapping(entry, "band.nested").items():
        key = f"band.nested.{figure}"
        if not isinstance(levels, dict):
            where.fail(key, levels, "is not an object")
        for level, sizes in levels.items():  # a level ("0.8") holds a dot: not a key mapping() can split
            if not isinstance(sizes, dict):
                where.fail(f"{key}.{level}", sizes, "is not an object")
            if not _is_number(level):
                where.fail(f"{key}", level, "is not a level")
            nested.setdefault(figure, {})[float(level)] = {
                size: where.number(q, f"{key}.{level}.{size}", 0, finite=False) for size, q in sizes.items()}
    return intervals.Band(widths(where.mapping(entry, "band.halfwidth"), "band.halfwidth"), int(n), by_size,
                          nested=nested)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
