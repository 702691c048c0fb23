"""Every figure function on a small synthetic table: failed configurations, a missing source, one
target; Chinese labels with no missing glyph; identical bytes for an identical table."""
import warnings

import numpy as np
import pandas as pd
import pytest

from experiments.aggregate import combine
from experiments.study import to_frame
from figures.catalog import KINDS, figure_specs, render, stem
from figures.labels import LABELS

VERSIONS = {"jax_version": "0.10.2", "libtpu_version": "0.0.42.1", "git_sha": "abc"}
MiB = 2**20


def row(experiment, kernel, dtype, size, blocks=(None, None, None), status="ok", tflops=np.nan, search=False,
        vmem=None, limit=16 * MiB, raised=False, source="estimate"):
    bm, bk, bn = blocks
    flops = 2 * size**3
    return dict(source=source, target="v5e", device_kind="TPU v5 lite", experiment=experiment, kernel=kernel,
                dtype=dtype, m=size, k=size, n=size, bm=bm, bk=bk, bn=bn, status=status,
                tflops=tflops if status == "ok" else np.nan, search=search, vmem_bytes=vmem,
                vmem_limit_bytes=limit, oom_limit_bytes=limit if status == "vmem_oom" else None,
                raised_limit=raised, hbm_bytes=flops // 100, peak_tflops=197.0, hbm_bytes_per_s=8.2e11,
                error="", cycles_method="")


@pytest.fixture(scope="module")
def table():
    rows = [
        row("v1", "v1", "float32", 1024, tflops=90.0, vmem=12 * MiB),
        row("v1", "v1", "float32", 2048, status="vmem_oom", vmem=int(48.82 * MiB)),
        row("v1", "v1", "float32", 2048, tflops=120.0, vmem=49 * MiB, limit=64 * MiB, raised=True),
        row("v5", "v5", "bfloat16", 1024, (512, 1024, 1024), tflops=100.0, vmem=8 * MiB),
        row("v5", "v5", "bfloat16", 2048, (512, 1024, 1024), tflops=170.0, vmem=11 * MiB),
        row("v5", "v5", "bfloat16", 2048, (1024, 1024, 1024), status="vmem_oom", vmem=19 * MiB),
        row("v5", "v5", "bfloat16", 2048, (256, 512, 512), tflops=150.0, search=True, vmem=3 * MiB),
        row("v5", "v5", "bfloat16", 2048, (256, 1024, 512), tflops=160.0, search=True, vmem=4 * MiB),
        row("v5", "v5", "bfloat16", 2048, (512, 512, 512), status="vmem_oom", search=True, vmem=17 * MiB),
        row("xla", "xla", "float32", 1024, tflops=100.0),
        row("xla", "xla", "float32", 2048, tflops=150.0),
        row("xla", "xla", "bfloat16", 1024, tflops=120.0),
        row("xla", "xla", "bfloat16", 2048, tflops=180.0),
    ]
    estimates = to_frame(rows, VERSIONS)
    published = to_frame([
        row("v5", "v5", "bfloat16", 2048, (512, 1024, 1024), tflops=78.4, source="published", limit=None),
        row("v5", "v5", "bfloat16", 2048, (1024, 1024, 1024), status="failed", source="published", limit=None),
        row("v1", "v1", "float32", 2048, status="failed", source="published", limit=None),
    ], {}).drop(columns=["jax_version", "libtpu_version", "git_sha"])
    return combine([estimates], published)


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
        args = {"target": "v5e"} if kind in ("vmem", "roofline", "fidelity") else {"experiment": "v5", "dtype": "bfloat16"}
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
