"""The report: complete catalogs, autoescaping, no external resources, findings that state the
fixture's numbers, partial data, and a PDF with the CJK font embedded."""
import re
import shutil
import subprocess

import pandas as pd
import pytest

from report import build

TARGETS = ["v5e"]
FIGURES = {"v1_float32_v5e", "v5_bfloat16_v5e", "search_v5_bfloat16_v5e", "vmem_v5e", "roofline_v5e",
           "fidelity_v5e"}
CORRECTNESS = {"passed": 58, "total": 59}


def render(df, lang="en", **kwargs):
    args = dict(lang=lang, config_yaml="targets: [v5e]\n", targets=TARGETS, figure_names=FIGURES,
                correctness=CORRECTNESS)
    return build.render_html(df, **(args | kwargs))


def test_catalog_is_complete():
    assert build.translations("zh").gettext("Introduction") == "简介"


def test_missing_translation_fails_the_build(tmp_path, monkeypatch):
    catalog = tmp_path / "zh" / "LC_MESSAGES" / "messages.po"
    catalog.parent.mkdir(parents=True)
    text = (build.LOCALE / "zh" / "LC_MESSAGES" / "messages.po").read_text()
    catalog.write_text(text.replace('msgstr "简介"', 'msgstr ""'))
    monkeypatch.setattr(build, "LOCALE", tmp_path)
    with pytest.raises(build.CatalogError, match="Introduction"):
        build.translations("zh")


def test_autoescaping_is_on(table):
    env, _ = build.environment("en")
    assert env.autoescape is True
    hostile = table.copy()
    hostile.loc[hostile.source == "published", "device_kind"] = "<script>alert(1)</script>"
    html = render(hostile)
    assert "<script>" not in html and "&lt;script&gt;" in html


@pytest.mark.slow
def test_html_loads_no_external_resource(table):
    # Resources (images, stylesheets, fonts, scripts) are local; links for the reader to follow may not be.
    for lang in ("en", "zh"):
        html = render(table, lang)
        links = (re.findall(r'src="([^"]*)"', html) + re.findall(r"url\(([^)]*)\)", html)
                 + re.findall(r'<link[^>]*href="([^"]*)"', html))
        assert links, "expected figure links"
        for link in links:
            assert not re.match(r"^(https?:)?//", link.strip("'\"")), link


@pytest.mark.slow
def test_findings_state_the_fixture_numbers(table):
    en = render(table, "en")
    assert "On v5e, v1 compiles up to 1024; at 2048 it needs 48.8 MiB of VMEM against a 16 MiB limit." in en
    # v5: the post's best block (512, 1024, 1024) at 2048 is the fixture's 170 against XLA's 180; no 8192 row
    assert "of XLA&#39;s estimate at 8192" not in en
    zh = render(table, "zh")
    assert "在 v5e 上，v1 最大能编译到 1024；到 2048 时需要 48.8 MiB VMEM，超出 16 MiB 的上限。" in zh
    assert 'lang="zh-Hans"' in zh and 'href="report.en.html"' in zh


def test_agreement_sentence_uses_the_table(table):
    html = render(table, "en")
    # fixture: one v5 configuration at 2048 with both numbers, 170 estimated against 78.4 published
    assert "1 configurations have both an estimate and a published number" in html
    assert "The median ratio estimate / published is 2.17" in html


@pytest.mark.slow
@pytest.mark.parametrize("part", ["published_only", "estimates_only", "other_target"])
def test_report_builds_from_partial_data(table, part):
    df = {"published_only": table[table.source == "published"],
          "estimates_only": table[table.source == "estimate"],
          "other_target": table[table.source == "estimate"].assign(target="v6e")}[part]
    html = render(df, "zh", targets=["v6e"] if part == "other_target" else TARGETS)
    assert "</html>" in html
    if part == "estimates_only":
        assert "本次运行的数据表中没有原文数据" in html


@pytest.mark.slow
def test_pdf_embeds_the_cjk_font(table, tmp_path):
    from figures.style import cjk_font_path

    html = render(table, "zh", for_pdf=True)
    pdf = tmp_path / "report.zh.pdf"
    build.write_pdf(html, base_url=str(tmp_path) + "/", pdf_path=pdf, font_path=cjk_font_path())
    assert pdf.read_bytes().startswith(b"%PDF")
    if not (shutil.which("pdffonts") and shutil.which("pdftotext")):
        pytest.skip("poppler-utils (pdffonts, pdftotext) not installed; .ci/run installs it")
    fonts = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True, check=True).stdout
    cjk = [line for line in fonts.splitlines() if "Noto-Sans-CJK-SC" in line]
    assert cjk and all(" yes yes yes " in line for line in cjk), fonts  # embedded, subset, unicode
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "简介" in text and "如何引用" in text and "环境与数据来源" in text


@pytest.mark.slow
def test_embedded_font_covers_the_page(table):
    from figures.style import cjk_font_path

    html = build.embed_cjk_font(render(table, "zh"), cjk_font_path())
    assert "@font-face" in html and "data:font/woff2;base64," in html


# --- figures people can cite, a tighter layout, natural Chinese ---------------------------------------

@pytest.mark.slow
def test_figures_are_numbered_with_anchors_captions_and_a_cite_line(table):
    from figures.catalog import describe, spec_from_name

    for lang in ("en", "zh"):
        html = render(table, lang)
        numbers = [int(n) for n in re.findall(r'class="fignum" href="#fig-[^"]+">(?:Figure |图 )(\d+)', html)]
        assert numbers == list(range(1, len(FIGURES) + 1)), numbers
        for name in FIGURES:
            assert f'<figure id="fig-{name}"' in html
            kind, args = spec_from_name(name)
            info = describe(table, name, kind, args, lang)
            assert html.count(f'alt="{info["alt"]}"'.replace("'", "&#39;")) == 1, name
        assert html.count('class="cite"') == len(FIGURES)
        assert "commit abc" in html or "提交 abc" in html
        assert "version = {0.1.0}" in html


@pytest.mark.slow
def test_each_listing_once_in_the_appendix(table):
    html = render(table, "en", for_pdf=True)
    appendix = html[html.index('id="appendix"'):]
    # one section per experiment the table holds (v1, v5 here), each kernel's listing once
    for module in ("v1_naive", "v5_accumulator"):
        assert html.count(f'<h3 id="code-{module}">') == 1 and f'href="#code-{module}"' in html
    assert 'id="code-v3_block"' not in html  # no v3 or v4 rows: no section, no listing
    assert '<h3 id="config">' in appendix and "targets: [v5e]" in appendix
    assert html.index('id="v5"') < html.index('id="appendix"')


@pytest.mark.slow
def test_published_column_note_only_where_the_post_published(table):
    html = render(table, "en")
    assert "the post&#39;s published number" in html  # v5 on v5e has published rows
    other = render(table[table.source == "estimate"].assign(target="v6e"), "en", targets=["v6e"])
    assert "the post&#39;s published number" not in other and "parentheses" not in other
    cells = re.findall(r"<td>(.*?)</td>", html)
    assert cells and not any(") (" in re.sub(r"<[^>]+>", " ", c) for c in cells)  # no stacked parentheses


@pytest.mark.slow
def test_the_chip_of_the_post_is_sourced(table):
    en, zh = render(table, "en"), render(table, "zh")
    assert "v5litepod-1" in en and "does not name it" in en
    assert "v5litepod-1" in zh and "原文没有写明" in zh
    assert "on a TPU v5e" not in en


def test_chinese_uses_the_glossary():
    """Every Chinese string of the figures and the report uses the fixed terms, not their variants."""
    from babel.messages import pofile

    from figures.catalog import CATALOG
    from figures.labels import AVOID, LABELS, SOURCE_NAMES

    with open(build.LOCALE / "zh" / "LC_MESSAGES" / "messages.po", "rb") as f:
        report_strings = [m.string for m in pofile.read_po(f) if m.id]
    strings = (report_strings + list(LABELS["zh"].values()) + list(SOURCE_NAMES["zh"].values())
               + [e.caption["zh"] for e in CATALOG.values()] + [e.alt["zh"] for e in CATALOG.values()])
    for text in strings:
        for variant, term in AVOID.items():
            assert not re.search(variant, text), f"{text!r}: use {term!r}, not {variant!r}"
    assert any("归约" in s for s in report_strings) and any("流水线" in s for s in report_strings)


def measured_runs(runs: int, sizes):
    """XLA measured at `sizes` in `runs` runs a day apart, as the aggregate leaves such rows; run d's
    samples are (1 + d / 10) * 100 us."""
    from experiments.core.schema import conform, frame
    from experiments.measure.statistics import derive

    rows = [dict(source="measured", target="v5e", device_kind="TPU v5 lite", experiment="xla", kernel="xla",
                 dtype="bfloat16", m=s, k=s, n=s, status="ok", run_label=f"vm-day{d:02d}",
                 timestamp=f"2026-11-{d + 1:02d}T00:00:00+00:00", vmem_limit_bytes=16 << 20, num_chips=1,
                 samples_s=[1e-4 * (1 + d / 10)] * 5, wall_samples_s=[2e-4] * 5)
            for d in range(runs) for s in sizes]
    return conform(derive(frame(rows, {"jax_version": "0.10.2", "git_sha": "abc"})))


def measured_section(html: str) -> str:
    start = html.index('<section id="measured">')
    return html[start:html.index("</section>", start)]


@pytest.mark.slow
def test_many_runs_are_summarised_in_a_bounded_table(table, monkeypatch):
    """30 runs of 5 configurations: one table of at most MAX_TABLE_ROWS rows, each configuration's
    latest run with the number of runs and the median over them, and a sentence on what was left out."""
    from report import tables

    monkeypatch.setattr(tables, "MAX_TABLE_ROWS", 3)
    df = pd.concat([table, measured_runs(30, [256, 512, 768, 1024, 1280])], ignore_index=True)
    en, zh = measured_section(render(df, "en")), measured_section(render(df, "zh"))
    assert en.count("<table>") == 1 and en.count("<tr>") == 1 + 3  # a header and three configurations
    assert "The table holds 150 measured rows from 30 runs" in en
    assert "2 more configurations are not listed here; every row is in results/matmul.parquet." in en
    assert "in 30 runs, 2026-11-01T00:00:00+00:00 to 2026-11-30T00:00:00+00:00" in en
    flop = 2 * 256**3
    latest, median = flop / (1e-4 * 3.9) / 1e12, flop / (1e-4 * 2.45) / 1e12
    assert (f"<td>{latest:.2f} ({latest:.2f}–{latest:.2f}) *</td>" in en  # *: no profiler samples
            and f"<td>30</td><td>{median:.2f}</td><td>vm-day29</td>" in en)
    assert "结果表共有 150 行实测值，来自 30 次运行" in zh and "另有 2 个配置未在此列出" in zh


@pytest.mark.slow
def test_a_few_runs_keep_a_table_each(table):
    df = pd.concat([table, measured_runs(2, [256, 512])], ignore_index=True)
    section = measured_section(render(df))
    assert section.count("<table>") == 2 and "run vm-day00" in section and "run vm-day01" in section
    assert "The table holds" not in section and "more configurations" not in section


@pytest.mark.slow
def test_the_readers_give_the_report_of_the_whole_table(table, tmp_path):
    """The report script reads each target's latest run (read_results) and every measured row's shown
    columns (read_measured): the same report as from the whole table in memory."""
    from experiments.analysis.runs import read_measured, read_results

    df = pd.concat([table, measured_runs(6, [256, 512])], ignore_index=True)
    path = tmp_path / "matmul.parquet"
    df.to_parquet(path, index=False)
    whole = render(pd.read_parquet(path))
    assert render(read_results(path), measured=read_measured(path)) == whole
    assert "in 6 runs" in measured_section(whole)
