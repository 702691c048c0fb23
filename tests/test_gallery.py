"""The gallery's cards for the advice figures (report/gallery.py): numbered as the report numbers them,
their files in results/advice/, and snippets that say what the figure's drawn rows are."""
import html
import re

import numpy as np
import pandas as pd
import pytest
from PIL import Image, PngImagePlugin

from tpu_matmul_repro.figures import advice_figure
from tpu_matmul_repro.report import build
from tpu_matmul_repro.report.gallery import page
from tpu_matmul_repro.report.typography import without_unit_spans

SHAPE = "8192x4096x14336"
FIGURES = ["v5_bfloat16_v5e", "vmem_v5e", "fidelity_v5e"]


def advice_table() -> pd.DataFrame:
    """Two ranked blocks (one a tie) and XLA on v5e, as results/advice/<shape>.csv has them."""
    def row(kernel, rank, tflops, tie=None):
        ms = 2 * 8192 * 4096 * 14336 / (tflops * 1e9)
        return dict(model_device_ms=ms, model_device_ms_hi80=ms * 1.15,
                    target="v5e", m=8192, k=4096, n=14336, dtype="bfloat16", kernel=kernel, rank=rank,
                    bm=512, bk=1024, bn=1024, status="ok", tie=tie, libtpu_version="0.0.42.1",
                    vmem_mib=11.1, vmem_limit_mib=16.0, model_device_tflops=tflops,
                    model_device_tflops_lo80=tflops / 1.15, model_device_tflops_lo95=tflops / 1.2,
                    model_device_tflops_hi80=min(197.0, tflops * 1.15),
                    model_device_tflops_hi95=min(197.0, tflops * 1.2))
    return pd.DataFrame([row("v5", 1.0, 186.6), row("v5", 2.0, 180.0, "tie with #1"),
                         row("xla", np.nan, 150.0)])


def _pngs(folder, names):
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:  # the gallery reads each PNG's title
        title = PngImagePlugin.PngInfo()
        title.add_text("Title", f"title of {name}")
        Image.new("RGB", (1, 1)).save(folder / f"{name}.png", pnginfo=title)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_advice_figure_has_a_card_numbered_as_in_the_report(table, tmp_path, lang):
    tables = {SHAPE: advice_table()}
    suffix = "" if lang == "en" else ".zh"
    _pngs(tmp_path / "figures", [f"{n}{suffix}" for n in FIGURES])
    _pngs(tmp_path / "advice", [f"{SHAPE}{suffix}"])
    gallery = page(table, FIGURES, lang, tmp_path / "figures", advice=tables)
    report = without_unit_spans(build.render_html(
        table, lang=lang, config_yaml="targets: [v5e]\n", targets=["v5e"], figure_names=FIGURES,
        correctness={"passed": 1, "total": 1}, advice=tables))
    word = "Figure" if lang == "en" else "图"
    in_gallery = dict(re.findall(rf'<section class="card" id="([^"]+)">\n<h2>{word} (\d+)\.', gallery))
    in_report = dict(re.findall(rf'<a class="fignum" href="#fig-([^"]+)">{word} (\d+)', report))
    assert f"advice_{SHAPE}" in in_gallery and in_gallery == in_report
    card = gallery[gallery.index(f'id="advice_{SHAPE}"'):]
    card = html.unescape(card[:card.index("</section>")])
    assert f'<img src="../advice/{SHAPE}{suffix}.png"' in card
    assert f"title of {SHAPE}{suffix}" in card  # read back from the advice rule's PNG
    info = advice_figure.describe(tables[SHAPE], SHAPE, lang)
    assert info["caption"] in card and info["kinds"] == ["modelled"]
    shown = {"en": "Numbers shown: modelled.", "zh": "建模值"}[lang]
    assert shown in card
    assert f"({SHAPE}{suffix}.png)" in card  # the Markdown snippet's image
    assert "0.0.42.1" in info["caption"] and "0.0.5" not in card


def test_a_phone_gets_the_narrow_variant_in_the_gallery_and_the_html_report(table, tmp_path, monkeypatch):
    """<picture>: at narrow widths the phone's variant (figures/figure_specs.py NARROW_KINDS), else the
    column's figure; a kind without a variant (a study's may have none: here vmem, taken out), and the PDF,
    keep the plain image."""
    from tpu_matmul_repro.report import gallery

    for module in (gallery, build):
        monkeypatch.setattr(module, "NARROW_KINDS", ("experiment",))
    _pngs(tmp_path / "figures", FIGURES)
    gallery = page(table, FIGURES, "en", tmp_path / "figures")
    narrow = '<source media="(max-width: 600px)" srcset="{}.narrow.png">'
    assert narrow.format("v5_bfloat16_v5e") in gallery and narrow.format("vmem_v5e") not in gallery
    args = dict(lang="en", config_yaml="targets: [v5e]\n", targets=["v5e"], figure_names=FIGURES,
                correctness={"passed": 1, "total": 1})
    screen, printed = build.render_pages(table, **args)
    assert narrow.format("../figures/v5_bfloat16_v5e") in screen
    assert "narrow.png" not in printed and narrow.format("../figures/vmem_v5e") not in screen
