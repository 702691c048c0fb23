"""The four classes every number of this project carries (estimated, modelled, measured,
published: docs/outputs.md), and the one rule that names a number's class."""
import pandas as pd

from tpu_matmul_repro.experiments.core.i18n import N_
from tpu_matmul_repro.experiments.core.schema import SOURCES

CLASSES = ("estimate", "modelled", "measured", "published")  # the order they are listed in
CLASS_NAMES = {"estimate": N_("estimated"), "modelled": N_("modelled"), "measured": N_("measured"),
               "published": N_("published")}
MODEL_COLUMNS = ("model_post_tflops", "model_device_tflops")


def number_class(source: str, through_model: bool = False) -> str:
    """The class of a number from its row's `source` and whether it went through the timing model."""
    if source not in SOURCES:
        raise ValueError(f"source: {source!r} is none of {', '.join(SOURCES)}")
    return "modelled" if source == "estimate" and through_model else source


def has_model(df: pd.DataFrame, columns=MODEL_COLUMNS) -> bool:
    """Whether the table's estimate rows carry the timing model's numbers (a run with a fit)."""
    est = df[df.source == "estimate"] if len(df) and "source" in df else df.iloc[:0]
    return any(c in est and est[c].notna().any() for c in columns)


def speed_classes(df: pd.DataFrame) -> list[str]:
    """The classes of the speeds a report of `df` prints, in CLASSES order (estimates are modelled
    where the table has the timing model's numbers)."""
    present = set(df.source) if len(df) else set()
    found = {number_class(s, through_model=has_model(df)) for s in present}
    return [c for c in CLASSES if c in found]


def class_names(classes, gettext=lambda s: s) -> list[str]:
    """The classes' names in a language (its gettext)."""
    return [gettext(CLASS_NAMES[c]) for c in classes]
