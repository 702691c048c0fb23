"""The four classes every number of this project carries, and the one rule that names a number's class.

estimated: libtpu's raw number (a deviceless compile: VMEM, out-of-memory errors, cycles);
modelled: the timing model's (libtpu's cycles turned into time by constants fitted on the post's
published v5e numbers); measured: a real TPU's; published: read off the post's figures. A row's
`source` (experiments/core/schema.py SOURCES) says estimate, measured or published; an estimate row's
number is modelled where what is shown is one of the timing model's columns, not libtpu's own.
"""
import pandas as pd

from tpu_matmul_repro.experiments.core.i18n import N_
from tpu_matmul_repro.experiments.core.schema import SOURCES

CLASSES = ("estimate", "modelled", "measured", "published")  # the order they are listed in
CLASS_NAMES = {"estimate": N_("estimated"), "modelled": N_("modelled"), "measured": N_("measured"),
               "published": N_("published")}
MODEL_COLUMNS = ("model_post_tflops", "model_device_tflops")


def number_class(source: str, through_model: bool = False) -> str:
    """The class of a number from its row's `source`, and for an estimate whether the number shown
    went through the timing model."""
    if source not in SOURCES:
        raise ValueError(f"source: {source!r} is none of {', '.join(SOURCES)}")
    return "modelled" if source == "estimate" and through_model else source


def has_model(df: pd.DataFrame, columns=MODEL_COLUMNS) -> bool:
    """Whether the table's estimate rows carry the timing model's numbers (a run with a fit)."""
    est = df[df.source == "estimate"] if len(df) and "source" in df else df.iloc[:0]
    return any(c in est and est[c].notna().any() for c in columns)


def speed_classes(df: pd.DataFrame) -> list[str]:
    """The classes of the speeds a report of `df` prints, in CLASSES order: its estimate rows'
    speeds are modelled where the table has the timing model's numbers (every speed the report
    states or draws then comes from them), else estimated."""
    present = set(df.source) if len(df) else set()
    found = {number_class(s, through_model=has_model(df)) for s in present}
    return [c for c in CLASSES if c in found]


def class_names(classes, gettext=lambda s: s) -> list[str]:
    """The classes' names in a language (its gettext)."""
    return [gettext(CLASS_NAMES[c]) for c in classes]
