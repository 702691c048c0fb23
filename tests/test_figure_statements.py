"""What a figure's caption, notes and metadata say, against what its drawing code drew: the libtpu
versions named are those of the drawn rows, and "not drawn" is said of a point if and only if it is
absent from the plot."""
import re

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from tpu_matmul_repro.experiments.plan.studies import load as load_studies
from tpu_matmul_repro.figures import plots
from tpu_matmul_repro.figures.catalog import CATALOG, describe, drawn_table
from tpu_matmul_repro.figures.figure_specs import figure_specs
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
    published = plots.roofline_published(table, "v5e")
    assert len(published)  # the post's own points, placed by their grid's HBM bytes
    assert points == len(rows[rows.kernel != "xla"]) + len(xla) + len(published)
    assert notes == []  # nothing flagged in this table, so no line says something is not drawn


def test_no_point_of_the_roofline_lies_above_its_own_roof(table):
    """The post's points under the roof they are drawn against, the chip's peak and HBM slope. (A
    modelled time never beats its roof, by the model's own terms: the fixture's estimates are made up,
    so they are not checked here.)"""
    modelled = table.assign(model_device_tflops=table.tflops)
    published = plots.roofline_published(modelled, "v5e")
    assert len(published)
    assert (published.tflops <= plots.point_roofs(published) * (1 + 1e-9)).all(), published


def test_the_roofline_s_roof_labels_cover_no_marker_and_its_keys_tell_hollow_from_filled(table):
    """Each panel's roof labels lie where no marker is (a corner, or above the points); the legend keys the
    marker styles on a neutral marker, hollow for this run (XLA's diamonds too) and filled for the post."""
    import numpy as np

    modelled = table.assign(model_device_tflops=table.tflops)
    use_style("en")
    fig = plots.plot_roofline(modelled, "v5e", "en")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    try:
        for ax in fig.axes:
            points = [ax.transData.transform(c.get_offsets()) for c in ax.collections if len(c.get_offsets())]
            for t in ax.texts:
                box = t.get_window_extent(renderer)
                for xy in points:
                    inside = ((xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1) & (xy[:, 1] >= box.y0)
                              & (xy[:, 1] <= box.y1))
                    assert not inside.any(), (t.get_text(), xy[inside])
        keys = {t.get_text(): h for lg in fig.legends + [a.get_legend() for a in fig.axes if a.get_legend()]
                for t, h in zip(lg.get_texts(), lg.legend_handles, strict=True)}
        assert keys["hollow: this run"].get_markerfacecolor() == "none"
        assert keys["filled: published (the post)"].get_markerfacecolor() != "none"
        assert np.asarray(keys["XLA jnp.matmul"].get_facecolor()).size == 0  # XLA's own: hollow
    finally:
        plt.close(fig)


def test_numbers_shown_names_the_four_classes(table):
    """The gallery's "Numbers shown" (catalog.kinds_of): modelled where the timing model's numbers are
    drawn, estimated where libtpu's are, both for the fidelity figure's two panels."""
    from tpu_matmul_repro.figures.catalog import figure_rows, kinds_of

    modelled = table.assign(model_post_tflops=table.tflops, model_device_tflops=table.tflops)
    for kind, args, expected in [
        ("roofline", {"target": "v5e"}, ["modelled", "published"]),
        ("vmem", {"target": "v5e"}, ["estimate"]),
        ("experiment", {"experiment": "v5", "dtype": "bfloat16", "target": "v5e"}, ["modelled", "published"]),
        ("fidelity", {"target": "v5e"}, ["estimate", "modelled", "published"]),
    ]:
        assert kinds_of(figure_rows(modelled, kind, args), kind) == expected, kind
    bare = table.drop(columns=["model_post_tflops", "model_device_tflops"], errors="ignore")
    assert kinds_of(figure_rows(bare, "roofline", {"target": "v5e"}), "roofline") == ["estimate", "published"]


# --- the advice figure (figures/advice_figure.py): what it says against the rows it draws -------------

def advice_table(ties_v5e: int = 3) -> pd.DataFrame:
    """An advisor table of two targets as results/advice/<shape>.csv has it: on v5e the best block, some
    ties (the first ones' intervals cut at the 197 peak), one block that does not tie and XLA; on v6e
    one block and XLA, from another libtpu (which a caption must then name)."""
    def row(target, kernel, rank, tflops, tie=None, hi=1.15, libtpu="0.0.42.1", bm=512):
        return dict(target=target, m=8192, k=4096, n=14336, dtype="bfloat16", kernel=kernel, rank=rank,
                    bm=bm, bk=1024, bn=1024, status="ok", tie=tie, libtpu_version=libtpu,
                    model_device_tflops=tflops, model_device_tflops_lo80=tflops / 1.15,
                    model_device_tflops_hi80=tflops * hi, model_device_tflops_lo95=tflops / 1.3,
                    model_device_tflops_hi95=tflops * hi * 1.1)
    v5e = [row("v5e", "v5", 1.0, 186.6, hi=197 / 186.6 / 1.1)]
    v5e += [row("v5e", "v5", 2.0 + i, 180.0 - 5 * i, tie="tie with #1", bm=128 * (i + 1))
            for i in range(ties_v5e)]
    v5e += [row("v5e", "v5", 2.0 + ties_v5e, 120.0, bm=4096), row("v5e", "v5", None, np.nan, bm=8192),
            row("v5e", "xla", None, 192.9, hi=1.0)]
    v6e = [row("v6e", "v5", 1.0, 700.0, libtpu="0.0.43"), row("v6e", "xla", None, 844.6, libtpu="0.0.43")]
    frame = pd.DataFrame(v5e + v6e)
    # as the advisor writes them: no interval past the chip's peak
    peak = frame.target.map({"v5e": 197.0, "v6e": 920.0})
    for column in ("model_device_tflops_hi80", "model_device_tflops_hi95"):
        frame[column] = frame[column].clip(upper=peak)
    return frame


def test_the_advice_figure_reads_the_advisor_s_own_table_where_xla_is_fastest():
    """As the advice job hands it over: a non-tie's `tie` is an empty string (not NaN), and where XLA is
    modelled faster the ties, #1 among them, are tied with XLA. The panel title counts the tied blocks
    and names what they tie with; the blocks that do not tie are not drawn."""
    from tpu_matmul_repro.figures import advice_figure

    table = advice_table(2)
    v5e = table.target == "v5e"
    table.loc[v5e & (table.kernel == "xla"), "model_device_tflops"] = 196.0
    table.loc[v5e & table["rank"].notna(), "tie"] = ""
    table.loc[v5e & table["rank"].isin([1.0, 2.0, 3.0]), "tie"] = "tie with XLA (within its 80 % interval)"
    table["tie"] = table["tie"].fillna("")
    use_style("en")
    fig = advice_figure.draw(table, "8192x4096x14336", "en")
    labels, titles = _panel_labels(fig), [ax.get_title(loc="left") for ax in fig.axes]
    plt.close(fig)
    assert [label.split()[0] for label in labels[0]] == ["#1", "#2", "#3", "XLA"]
    assert titles[0].startswith("v5e: 3 tied with XLA;") and titles[1].startswith("v6e: 0 tied with XLA;")
    assert "(3 on v5e, 0 on v6e)" in advice_figure.describe(table, "8192x4096x14336", "en")["caption"]


def _panel_labels(fig) -> list[list[str]]:
    return [[t.get_text() for t in ax.get_yticklabels()] for ax in fig.axes]


@pytest.mark.parametrize("ties", [0, 3, 14])
def test_the_advice_figure_draws_every_tie_and_its_caption_counts_them(ties):
    from tpu_matmul_repro.figures import advice_figure

    table = advice_table(ties)
    use_style("en")
    fig = advice_figure.draw(table, "8192x4096x14336", "en")
    labels = _panel_labels(fig)
    plt.close(fig)
    ranked = table[(table.target == "v5e") & table["rank"].notna() & (table.kernel != "xla")]
    tied = ranked[ranked.tie.notna()]
    assert len(labels[0]) == 1 + len(tied) + 1  # the best, every tie, XLA
    assert [label.split()[0] for label in labels[0][:-1]] == [f"#{int(r)}" for r in
                                                            [1.0, *tied["rank"]]]
    assert f"#{int(ranked['rank'].max())} " not in " ".join(labels[0])  # the block that does not tie
    assert labels[0][-1] == "XLA" and labels[1] == ["#1 (512, 1024, 1024)", "XLA"]
    caption = advice_figure.describe(table, "8192x4096x14336", "en")["caption"]
    assert f"({ties} on v5e, 0 on v6e)" in caption
    assert "libtpu 0.0.42.1, 0.0.43's" in caption  # the versions of the drawn rows, each target's


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_advice_figure_shows_intervals_cut_at_the_peak_and_says_so(lang):
    """v5e's bars were clipped at the 197 peak by the frame: the axis now reaches past the peak, every
    bar ends inside it, and the caption's count of intervals that reach the peak is the drawing's."""
    from tpu_matmul_repro.figures import advice_figure

    table = advice_table()
    use_style(lang)
    fig = advice_figure.draw(table, "8192x4096x14336", lang)
    try:
        for ax, peak in zip(fig.axes, (197.0, 920.0), strict=True):
            left, right = ax.get_xlim()
            assert right > peak  # the dashed peak line and every bar's end in view
            ends = np.concatenate([np.asarray(c.get_segments())[:, :, 0].ravel() for c in ax.collections
                                   if hasattr(c, "get_segments")])
            assert ends.min() > left and ends.max() <= peak + 1e-9
    finally:
        plt.close(fig)
    drawn = advice_figure.drawn_rows(table)
    at_peak = sum(int((rows.model_device_tflops_hi95 >= peak - 1e-9).sum())
                  for (target, rows), peak in zip(drawn.items(), (197.0, 920.0), strict=True))
    assert at_peak == 6  # v5e's best, its three ties and XLA; v6e's XLA
    said = {"en": f"{at_peak} of the intervals reach the chip's peak",
            "zh": f"其中 {at_peak} 个区间达到芯片峰值"}
    assert said[lang] in advice_figure.describe(table, "8192x4096x14336", lang)["caption"]
    below = table.assign(model_device_tflops_hi95=table.model_device_tflops_hi95 * 0.9,
                         model_device_tflops_hi80=table.model_device_tflops_hi80 * 0.9)
    caption = advice_figure.describe(below, "8192x4096x14336", lang)["caption"]
    assert "reach the chip's peak" not in caption and "达到芯片峰值" not in caption


def test_english_notes_after_a_full_stop_begin_with_a_capital(table):
    """A note that follows a caption's full stop is a sentence: "… TPU. Grey: XLA …", not "grey"; a
    name spelt in lower case (libtpu, v5) stays as it is."""
    from tpu_matmul_repro.figures import advice_figure
    from tpu_matmul_repro.figures.labels import sentence

    rows = table.copy()
    rows["estimate_nonmonotonic"] = rows.estimate_nonmonotonic.astype(object)
    rows.loc[(rows.kernel == "xla") & (rows.m == 2048) & (rows.source == "estimate"),
             "estimate_nonmonotonic"] = True  # a "not drawn" note
    captions = [describe(rows, name, kind, args, "en")["caption"] for name, (kind, args) in SPECS.items()]
    captions.append(advice_figure.describe(advice_table(), "8192x4096x14336", "en")["caption"])
    assert any(". XLA at 2048 not drawn" in c for c in captions)
    assert "TPU. Grey: XLA's jnp.matmul" in captions[-1]
    for caption in captions:
        assert not re.search(r"[a-z0-9)]\. [a-z]", caption), caption
    assert sentence("en", "libtpu's estimate") == "libtpu's estimate"
    assert sentence("en", "v5 fails") == "v5 fails" and sentence("zh", "x") == "x"


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("ties", [0, 18])
def test_the_advice_figure_passes_the_layout_check(lang, ties):
    from tpu_matmul_repro.figures import advice_figure, layout

    for narrow in (False, True):
        use_style(lang)
        fig = advice_figure.draw(advice_table(ties), "8192x4096x14336", lang, narrow=narrow)
        try:
            assert layout.problems(fig) == []
            assert "\n" not in fig.get_suptitle()  # one line; the rest is in the caption
            if narrow:  # the phone's variant: its smallest text 9 px or more at 390 px
                assert layout.smallest_font_px(fig, 390) >= 9.0
        finally:
            plt.close(fig)


def test_the_roofline_caption_says_the_post_s_points_are_filled(table):
    caption = describe(table, "roofline_v5e", "roofline", {"target": "v5e"}, "en")["caption"]
    assert "the post's published numbers, read off its figures (filled markers)" in caption, caption
    caption = describe(table, "v5_bfloat16_v5e", "experiment", {"experiment": "v5", "dtype": "bfloat16",
                                                               "target": "v5e"}, "en")["caption"]
    assert "(hollow markers)" in caption, caption
