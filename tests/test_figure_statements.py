"""What a figure's caption, notes and metadata say, against what its drawing code drew: the libtpu
versions named are those of the drawn rows, and "not drawn" is said of a point if and only if it is
absent from the plot."""
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from tpu_matmul_repro.experiments.plan.studies import load as load_studies
from tpu_matmul_repro.figures import plots
from tpu_matmul_repro.figures.catalog import CATALOG, describe, drawn_table
from tpu_matmul_repro.figures.specs import figure_specs
from tpu_matmul_repro.figures.style import use_style

load_studies(["then_and_now"])
CONFIG = {"targets": ["v5e"], "compile_study": {"experiments": {
    "v1": {"kernel": "v1", "dtypes": ["float32"]},
    "v5": {"kernel": "v5", "dtypes": ["bfloat16"], "search": {}},
}}}
SPECS = figure_specs(CONFIG)


@pytest.fixture
def two_toolchains(table):
    """The table with a second, older toolchain's estimates of every configuration: libtpu 0.0.5,
    no static profile, so no number (as the post-era compiler in a default run)."""
    current = table.assign(toolchain=np.where(table.source == "estimate", "current", ""))
    old = current[current.source == "estimate"].assign(
        toolchain="post", libtpu_version="0.0.5", tflops=np.nan, cycles_method="no_static_profile",
        model_post_tflops=np.nan)
    return pd.concat([current, old], ignore_index=True)


@pytest.mark.parametrize("name", [n for n, (kind, _) in SPECS.items() if not CATALOG[kind].every_toolchain])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_caption_names_only_the_drawn_rows_libtpu(two_toolchains, name, lang):
    kind, args = SPECS[name]
    info = describe(two_toolchains, name, kind, args, lang, primary="current")
    drawn = drawn_table(two_toolchains, kind, "current")
    assert set(drawn[drawn.source == "estimate"].libtpu_version) == {"0.0.42.1"}
    assert "0.0.5" not in info["caption"] and "0.0.5" not in info["alt"]
    # the older toolchain's missing numbers are not this figure's: no line says they are not drawn
    assert "no static profile" not in info["caption"] and "静态" not in info["caption"]


def test_the_drawing_and_its_caption_read_the_same_rows(two_toolchains):
    for name, (kind, _) in SPECS.items():
        if CATALOG[kind].every_toolchain:
            continue
        drawn = drawn_table(two_toolchains, kind, "current")
        assert "post" not in set(drawn.toolchain), name


def _xla_sizes(fig) -> set[int]:
    """The sizes at which the experiment figure drew an XLA point (its black estimate line)."""
    ax = fig.axes[0]
    xla = [line for line in ax.lines if line.get_color() == plots.XLA_COLOR and line.get_linestyle() == "--"]
    return {int(x) for line in xla for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True)
            if np.isfinite(y)}


@pytest.mark.parametrize("flag", [False, True])
def test_not_drawn_is_said_if_and_only_if_the_point_is_absent(table, flag):
    rows = table.copy()
    xla = (rows.kernel == "xla") & (rows.dtype == "bfloat16") & (rows.m == 2048) & (rows.source == "estimate")
    rows["estimate_nonmonotonic"] = rows.estimate_nonmonotonic.astype(object)
    rows.loc[xla, "estimate_nonmonotonic"] = flag
    use_style("en")
    fig = plots.plot_experiment(rows, "v5", "bfloat16", "v5e", "en")
    drawn = _xla_sizes(fig)
    plt.close(fig)
    notes = " ".join(plots.experiment_view(rows, "v5", "bfloat16", "v5e", "en")[2])
    caption = describe(rows, "v5_bfloat16_v5e", "experiment", {"experiment": "v5", "dtype": "bfloat16",
                                                              "target": "v5e"}, "en")["caption"]
    said = "XLA at 2048 not drawn" in notes
    assert said == flag == (2048 not in drawn)
    assert ("XLA at 2048 not drawn" in caption) == said
    assert 1024 in drawn


def test_roofline_draws_every_unflagged_point_of_its_view(table):
    use_style("en")
    fig = plots.plot_roofline(table, "v5e", "en")
    rows, _, notes = plots.roofline_view(table, "v5e", "en")
    points = sum(len(c.get_offsets()) for ax in fig.axes for c in ax.collections)
    plt.close(fig)
    xla = rows[rows.kernel == "xla"].drop_duplicates(["dtype", "m", "k", "n"])
    assert points == len(rows[rows.kernel != "xla"]) + len(xla)
    assert notes == []  # nothing flagged in this table, so no line says something is not drawn


def test_numbers_shown_names_the_four_classes(table):
    """The gallery's "Numbers shown" (catalog.kinds_of): modelled where the timing model's numbers are
    drawn, estimated where libtpu's are, both for the fidelity figure's two panels."""
    from tpu_matmul_repro.figures.catalog import figure_rows, kinds_of

    modelled = table.assign(model_post_tflops=table.tflops, model_device_tflops=table.tflops)
    for kind, args, expected in [
        ("roofline", {"target": "v5e"}, ["modelled"]),
        ("vmem", {"target": "v5e"}, ["estimate"]),
        ("experiment", {"experiment": "v5", "dtype": "bfloat16", "target": "v5e"}, ["modelled", "published"]),
        ("fidelity", {"target": "v5e"}, ["estimate", "modelled", "published"]),
    ]:
        assert kinds_of(figure_rows(modelled, kind, args), kind) == expected, kind
    bare = table.drop(columns=["model_post_tflops", "model_device_tflops"], errors="ignore")
    assert kinds_of(figure_rows(bare, "roofline", {"target": "v5e"}), "roofline") == ["estimate"]
