"""The layout check (figures/layout.py) on every kind of figure in both languages, and on figures built
to break each of its rules, so that a check that passes is one that could have failed."""
import matplotlib.pyplot as plt
import pytest

from tpu_matmul_repro.experiments.plan.studies import load as load_studies
from tpu_matmul_repro.figures import layout
from tpu_matmul_repro.figures.catalog import CATALOG
from tpu_matmul_repro.figures.figure_specs import NARROW_KINDS, figure_specs
from tpu_matmul_repro.figures.style import use_style

load_studies(["then_and_now"])
CONFIG = {"targets": ["v5e", "v6e"], "compile_study": {"experiments": {
    "v1": {"kernel": "v1", "dtypes": ["float32"]},
    "v5": {"kernel": "v5", "dtypes": ["bfloat16"], "search": {}},
}}}
SPECS = figure_specs(CONFIG)


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", list(SPECS))
def test_every_figure_passes_the_layout_check(table, name, lang):
    kind, args = SPECS[name]
    use_style(lang)
    fig = CATALOG[kind].draw(table, lang=lang, **args)
    try:
        assert layout.problems(fig) == []
    finally:
        plt.close(fig)


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", [n for n, (kind, _) in SPECS.items() if kind in NARROW_KINDS])
def test_every_phone_variant_passes_the_layout_check(table, name, lang):
    kind, args = SPECS[name]
    use_style(lang)
    fig = CATALOG[kind].draw(table, lang=lang, narrow=True, **args)
    try:
        assert layout.problems(fig) == []
        assert layout.smallest_font_px(fig, PHONE_PX) >= READABLE_PX
    finally:
        plt.close(fig)


def test_every_kind_has_a_phone_variant():
    load_studies(["then_and_now"])
    assert set(CATALOG) <= set(NARROW_KINDS)


# A phone shows a figure about 390 px wide; below this its smallest text (ticks, legend, notes) is not
# read without zooming. The column's figure there is about 7 px; its phone's variant is not.
PHONE_PX, READABLE_PX = 390, 9.0


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_phone_variant_reads_at_390_px_where_the_column_figure_does_not(table, lang):
    kind, args = SPECS["v5_bfloat16_v5e"]
    use_style(lang)
    sizes = {}
    for narrow in (False, True):
        fig = CATALOG[kind].draw(table, lang=lang, narrow=narrow, **args)
        try:
            assert layout.problems(fig) == []
            sizes[narrow] = layout.smallest_font_px(fig, PHONE_PX)
        finally:
            plt.close(fig)
    assert sizes[False] < READABLE_PX <= sizes[True], sizes


def test_every_kind_of_figure_is_checked():
    assert {kind for kind, _ in SPECS.values()} >= set(CATALOG) - {"then_and_now"}


def _figure():
    use_style("en")
    fig, ax = plt.subplots(figsize=(4, 3), layout="constrained")
    ax.plot([1, 2, 3], [1, 2, 3], "o")
    return fig, ax


def test_overlapping_texts_are_found():
    fig, ax = _figure()
    ax.text(0.1, 0.5, "one note here", transform=ax.transAxes)
    ax.text(0.12, 0.5, "another note", transform=ax.transAxes)
    found = layout.problems(fig)
    plt.close(fig)
    assert any("'one note here' overlaps" in p and "'another note'" in p for p in found)


def test_a_text_over_a_legend_is_found():
    fig, ax = _figure()
    ax.plot([1, 3], [2, 2], label="a series with a long name")
    ax.legend(loc="upper left")
    ax.text(0.02, 0.97, "a note in the corner", transform=ax.transAxes, va="top")
    found = layout.problems(fig)
    plt.close(fig)
    assert any("'a note in the corner' overlaps the axes 0 legend" in p for p in found)


def test_a_text_leaving_its_panel_is_found():
    fig, ax = _figure()
    ax.text(0.9, 0.5, "a note far too long for the panel", transform=ax.transAxes)
    found = layout.problems(fig)
    plt.close(fig)
    assert any("leaves its panel" in p for p in found)


def test_a_point_outside_the_axes_is_found():
    fig, ax = _figure()
    ax.set_ylim(0, 2.5)
    found = layout.problems(fig)
    plt.close(fig)
    assert any(p.startswith("axes 0: 1 of") and p.endswith("outside the axes") for p in found)


def test_a_clean_figure_passes():
    fig, _ = _figure()
    found = layout.problems(fig)
    plt.close(fig)
    assert found == []
