"""Every figure function on a small synthetic table: failed configurations, a missing source, one
target; Chinese labels with no missing glyph; identical bytes for an identical table."""
import warnings

import pytest

from figures.catalog import KINDS, figure_specs, render, stem
from figures.labels import LABELS

CONFIG = {"targets": ["v5e"], "compile_study": {"experiments": {
    "v1": {"kernel": "v1", "dtypes": ["float32"]},
    "v5": {"kernel": "v5", "dtypes": ["bfloat16"], "search": {}},
}}}


def test_label_catalogs_have_the_same_keys():
    assert LABELS["en"].keys() == LABELS["zh"].keys()


def test_single_target_config_has_no_generations_figure():
    names = figure_specs(CONFIG)
    assert "v5_bfloat16_v5e" in names and "search_v5_bfloat16_v5e" in names and "fidelity_v5e" in names
    assert not any(n.startswith("generations") for n in names)
    two = figure_specs({**CONFIG, "targets": ["v5e", "v6e"]})
    assert "generations_v5_bfloat16" in two and "fidelity_v6e" not in two


@pytest.mark.parametrize("name, spec", list(figure_specs({**CONFIG, "targets": ["v5e", "v6e"]}).items()))
def test_every_figure_renders_in_both_languages_without_missing_glyphs(table, tmp_path, name, spec):
    kind, args = spec
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*Glyph.*missing.*")
        paths = render(table, name, kind, args, tmp_path)  # v6e has no rows: a "no data" figure
    assert len(paths) == 6 and all(p.stat().st_size > 1000 for p in paths)


def test_figures_render_without_published_rows(table, tmp_path):
    estimates_only = table[table.source == "estimate"]
    for kind in KINDS:
        args = {"target": "v5e"} if kind in ("vmem", "roofline", "fidelity", "then_and_now") else {"experiment": "v5", "dtype": "bfloat16"}
        if kind in ("experiment", "search"):
            args["target"] = "v5e"
        render(estimates_only, f"{kind}_only", kind, args, tmp_path)


def test_two_renders_are_byte_identical(table, tmp_path):
    first = render(table, "v5_bfloat16_v5e", "experiment", dict(experiment="v5", dtype="bfloat16", target="v5e"),
                   tmp_path / "a")
    second = render(table, "v5_bfloat16_v5e", "experiment", dict(experiment="v5", dtype="bfloat16", target="v5e"),
                    tmp_path / "b")
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_chinese_names_add_the_language():
    assert stem("d", "v5_bfloat16_v5e", "zh").name == "v5_bfloat16_v5e.zh"
    assert stem("d", "v5_bfloat16_v5e", "en").name == "v5_bfloat16_v5e"


def test_missing_glyph_is_detected(tmp_path):
    # The check itself can fail: the Latin font alone cannot draw Chinese.
    import matplotlib.pyplot as plt

    from figures.style import use_style

    use_style("en")
    fig, ax = plt.subplots()
    ax.set_title("矩阵乘法")
    with warnings.catch_warnings(), pytest.raises(UserWarning, match="missing from font"):
        warnings.filterwarnings("error", message=".*Glyph.*missing.*")
        fig.savefig(tmp_path / "x.png")
    plt.close(fig)


def test_table_without_new_columns_still_draws(table, tmp_path):
    old = table.drop(columns=["search", "peak_tflops"], errors="ignore")
    render(old, "v1_float32_v5e", "experiment", dict(experiment="v1", dtype="float32", target="v5e"), tmp_path)
