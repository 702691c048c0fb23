"""The printed report, read back from its PDF: figures placed wide enough to read (at most 350 ppi), no
word in the right margin or past the page, every table's columns on the page (report/print_check.py)."""
import shutil

import pytest
from PIL import Image
from test_report_numbers import with_8192

from tpu_matmul_repro.figures.style import cjk_font_path
from tpu_matmul_repro.report import build, print_check

pytestmark = pytest.mark.skipif(
    not (shutil.which("pdfimages") and shutil.which("pdftotext")),
    reason="poppler-utils (pdfimages, pdftotext) not installed; .ci/run installs it")
# the figures' pixel sizes in a default run (200 dpi): a 6.4-inch experiment figure, a wide block search
FIGURES = {"v1_float32_v5e": (1295, 1033), "search_v5_bfloat16_v5e": (1540, 788), "vmem_v5e": (1455, 927)}


def printed(table, tmp_path, lang):
    """The report of the fixture (XLA flagged at 8192 and a HIGHEST row: the widest best-vs-XLA table) as
    HTML and PDF, its figures blank images of a default run's pixel sizes."""
    figures = tmp_path / "figures"
    figures.mkdir(exist_ok=True)
    suffix = "" if lang == "en" else f".{lang}"
    for name, size in FIGURES.items():
        Image.new("RGB", size, "white").save(figures / f"{name}{suffix}.png", dpi=(200, 200))
    report = tmp_path / "report"
    report.mkdir(exist_ok=True)
    from tpu_matmul_repro.analysis.claims import claims_table
    from tpu_matmul_repro.analysis.fitted_model import fit_model

    df = with_8192(table, 120.0, True)
    claims = claims_table(df, fit_model(df), "current")  # the run's claims.csv: the findings table
    html = build.render_html(df, for_pdf=True, lang=lang, config_yaml="targets: [v5e]\n", targets=["v5e"],
                             figure_names=set(FIGURES), correctness={"passed": 1, "total": 1}, claims=claims)
    pdf = report / f"report.{lang}.pdf"
    build.write_pdf(html, base_url=str(report) + "/", pdf_path=pdf, font_path=cjk_font_path())
    return html, pdf


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_printed_report_has_readable_figures_and_no_clipped_table(table, tmp_path, lang):
    html, pdf = printed(table, tmp_path, lang)
    placed = print_check.image_placements(pdf)
    assert len(placed) == len(FIGURES)
    assert all(120 <= p["width_mm"] and p["ppi"] <= print_check.MAX_PPI for p in placed), placed
    assert print_check.problems(html, pdf) == []
    assert print_check.first_page_problems(html, pdf, lang) == []  # page 1: abstract and findings table
    assert print_check.body_problems(pdf, lang) == []  # the appendix's heading found, the body short
    headers = [h for t in print_check.table_headers(html) for h in t]
    assert "Fraction of XLA" in headers or lang == "zh"


def test_the_first_page_check_counts_the_abstract_s_words():
    html = '<section id="abstract"><p>' + "word " * 121 + "</p></section>"
    assert print_check.abstract_words(html) == 121 > print_check.ABSTRACT_WORDS


def test_the_check_finds_a_word_past_the_page_and_a_column_cut_off(monkeypatch):
    words = [dict(page=1, x0=40.0, x1=300.0, text="Target", page_width=595.0),
             dict(page=1, x0=560.0, x1=597.0, text="0.97", page_width=595.0)]
    monkeypatch.setattr(print_check, "words", lambda pdf: words)
    monkeypatch.setattr(print_check, "image_placements", lambda pdf: [
        dict(page=2, width_px=1295, ppi=656.0, width_mm=50.1)])
    html = "<table><thead><tr><th>Target</th><th>Fraction of XLA</th></tr></thead></table>"
    found = print_check.problems(html, "report.pdf")
    assert any("'0.97' reaches x = 597" in f for f in found)
    assert any("656 ppi" in f for f in found) and any("50 mm wide" in f for f in found)
    assert "a table's column 'Fraction of XLA' is not in the PDF" in found


def test_the_body_check_counts_the_pages_before_the_appendix(monkeypatch):
    pages = ["Title\nAbstract", "Contents"] + ["1. Section\ntext"] * 11
    pages += ["text\n\nAppendix\nA. Rules", "more"]
    monkeypatch.setattr(print_check, "page_texts", lambda pdf: pages)
    assert print_check.body_pages("x.pdf", "en") == 14
    assert print_check.body_problems("x.pdf", "en") == [
        "the body (before the appendix) is 14 pages, more than 12"]
    pages[13] = "Appendix\nA. Rules"
    assert print_check.body_pages("x.pdf", "en") == 13
    pages[12] = "附录\nA. 判定规则"
    assert print_check.body_pages("x.pdf", "zh") == 12 and print_check.body_problems("x.pdf", "zh") == []
    monkeypatch.setattr(print_check, "page_texts", lambda pdf: ["Title", "Contents", "text"])
    assert print_check.body_problems("x.pdf", "en") == ["no page holds the appendix's heading 'Appendix'"]
