"""The report (its catalog: tests/test_i18n.py): autoescaping, no external resources, findings that state the
fixture's numbers, partial data, and a PDF with the CJK font embedded."""
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from tpu_matmul_repro.experiments.plan.studies import load as load_studies
from tpu_matmul_repro.report import build, core_sections, sections
from tpu_matmul_repro.report.typography import without_unit_spans
from tpu_matmul_repro.studies.then_and_now import mechanism_text

load_studies(["then_and_now"])  # the default config's study: its section and first-page lines
TARGETS = ["v5e"]
FIGURES = {"v1_float32_v5e", "v5_bfloat16_v5e", "search_v5_bfloat16_v5e", "vmem_v5e", "roofline_v5e",
           "fidelity_v5e"}
CORRECTNESS = {"passed": 58, "total": 59}


def render(df, lang="en", **kwargs):
    """The report's page, its number-and-unit spans (typography.keep_units) taken out: its text."""
    args = dict(lang=lang, config_yaml="targets: [v5e]\n", targets=TARGETS, figure_names=FIGURES,
                correctness=CORRECTNESS)
    return without_unit_spans(build.render_html(df, **(args | kwargs)))


@pytest.fixture(scope="module")
def page(table):
    """`page(lang)`: the report's HTML of the `table` fixture with this module's defaults (`render`),
    made once per language for the tests that only read it (a page takes a second or two)."""
    pages = {}

    def made(lang: str) -> str:
        if lang not in pages:
            pages[lang] = render(table, lang)
        return pages[lang]

    return made


def test_autoescaping_is_on(table):
    env, _ = build.environment("en")
    assert env.autoescape is True
    hostile = table.copy()
    hostile.loc[hostile.source == "published", "device_kind"] = "<script>alert(1)</script>"
    html = render(hostile)
    assert "<script>" not in html and "&lt;script&gt;" in html


@pytest.mark.slow
def test_html_loads_no_external_resource(page):
    # Resources (images, stylesheets, fonts, scripts) are local; links for the reader to follow may not be.
    for lang in ("en", "zh"):
        html = page(lang)
        links = (re.findall(r'src="([^"]*)"', html) + re.findall(r"url\(([^)]*)\)", html)
                 + re.findall(r'<link[^>]*href="([^"]*)"', html))
        assert links, "expected figure links"
        for link in links:
            assert not re.match(r"^(https?:)?//", link.strip("'\"")), link


@pytest.mark.slow
def test_findings_state_the_fixture_numbers(page):
    en = page("en")
    assert "On v5e, v1 compiles up to 1024; at 2048 it needs 48.8 MiB of VMEM against a 16 MiB limit." in en
    # v5: the post's best block (512, 1024, 1024) at 2048 is the fixture's 170 against XLA's 180; no 8192 row
    assert "of XLA&#39;s estimate at 8192" not in en
    zh = page("zh")
    assert "在 v5e 上，v1 最大能编译到 1024；到 2048 时需要 48.8 MiB VMEM，超出 16 MiB 的上限。" in zh
    assert 'lang="zh-Hans"' in zh and 'href="report.en.html"' in zh


def result_files():
    """claims.csv, fidelity.csv, best_vs_xla.csv and the study's then_and_now.csv and
    then_and_now_claims.csv of a run, as the report reads them."""
    import json

    blank = dict(claim="", post_value="", this_value="", source="", reason="", source_kind="compile")
    claims = pd.DataFrame([
        dict(blank, claim_id="v1_fails_above_1024", toolchain="current", verdict="holds",
             reason_id="feasible_same",
             values=json.dumps(dict(ok=1024, fail=2048, limit=16, libtpu="0.0.42.1", target="v5e"))),
        dict(blank, claim_id="v2_up_to_2048", toolchain="current", verdict="differs",
             reason_id="feasible_differs",
             values=json.dumps(dict(ok=1024, fail=2048, limit=16, post_ok=2048, post_fail=4096,
                                    libtpu="0.0.42.1", target="v5e"))),
    ])
    # the study's claims under the post's toolchain (then_and_now_claims.csv)
    claims_then = pd.DataFrame([
        dict(blank, claim_id="v2_up_to_2048", toolchain="post", verdict="holds", reason_id="feasible_same",
             values=json.dumps(dict(ok=2048, fail=4096, limit=16, libtpu="0.0.5", target="v5e"))),
    ])
    fidelity = pd.DataFrame([
        dict(estimator=e, validation=v, scope=scope, group=group, n=n, median_abs_log_ratio=mal,
             median_ratio=1.0, spearman=rho, note="", left_out="published run failed: 8")
        for e, v, mal in (("compiler", "none (libtpu's estimate)", 0.356),
                          ("model", "leave one experiment out", 0.0701))
        for scope, group, n, rho in (("all", "all", 61, 0.99), ("size >= 2048", "all", 44, 0.98),
                                     ("experiment", "v5", 4, float("nan")))])
    then_and_now = pd.DataFrame([
        dict(experiment="v2", kernel="v2", dtype="float32", m=2048, published_status="ok", post_status="ok",
             post_agrees=True, post_libtpu="0.0.5", current_status="vmem_oom", current_agrees=False,
             current_libtpu="0.0.42.1"),
        dict(experiment="v1", kernel="v1", dtype="float32", m=1024, published_status="ok", post_status="ok",
             post_agrees=True, post_libtpu="0.0.5", current_status="ok", current_agrees=True,
             current_libtpu="0.0.42.1")])
    best = pd.DataFrame([dict(target="v5e", dtype="bfloat16", size=8192, estimator=e, kernel="v5",
                              bm=512, bk=1024, bn=1024, fraction_of_xla=f, fraction_of_post_xla=0.97,
                              xla_flagged=False, best_tflops=180.0, xla_tflops=190.0, configurations=5)
                         for e, f in (("compiler", 0.5), ("model", 0.93))])
    return dict(claims=claims, fidelity=fidelity, best_vs_xla=best,
                study_tables={"then_and_now": then_and_now, "then_and_now_claims": claims_then})


def first_page(html: str) -> str:
    import html as entities

    return entities.unescape(html[html.index('id="abstract"'):html.index('<nav id="contents">')])


@pytest.mark.slow
def test_first_page_states_the_result_files(table):
    """The abstract and the findings table come from the result files, claim by claim: the post's number,
    this run's, the verdict (a compile claim's naming each compiler) and the test in a few words."""
    en = first_page(render(table, "en", primary_toolchain="current", **result_files()))
    assert "Of the post's 2 claims, 1 holds and 1 differs." in en  # each count with its plural
    # the timing model out of sample (leave one experiment out, scope all): 0.0701 is exp(0.0701) - 1 = 7 %
    assert "The model's out-of-sample error: a median 7 % (61 points)." in en
    assert ("gives the post's VMEM verdict for 1 of 2 of its configurations; the post's own (libtpu 0.0.5) "
            "for 2 of 2") in en
    assert "changed with the compiler, not with the kernels" in en
    assert en.count('<td class="verdict') == 2 and "<table" in en and en.count("<table") == 1
    assert "<td class=\"number\" data-label=\"The post:\">compiles up to 2048, fails from 4096</td>" in en
    assert "compiles up to 1024, fails from 2048</td>" in en
    assert "differs with today's compiler; holds with the post's compiler" in en
    assert "holds with today's compiler</strong>" in en  # checked under one compiler only
    assert "Largest size that compiles, first that fails, at the default VMEM limit." in en
    zh = first_page(render(table, "zh", primary_toolchain="current", **result_files()))
    assert "原文的 2 条论断中，1 条成立，1 条不符。" in zh and "原文当年的编译器" in zh
    assert "。 " not in zh.split("</p>")[0]  # Chinese sentences run on without a space


@pytest.mark.slow
def test_a_study_s_section_is_placed_listed_and_quoted_on_the_first_page_only_when_loaded(table, monkeypatch):
    """The then-and-now study adds its section after the timing model, its lines to the contents and the
    appendix list, its sentences to the abstract and key findings, the post's compiler's column to the
    key findings, and its files to the sources; the report without the study (studies: []) has none of
    them and still builds."""
    with_study = render(table, "en", primary_toolchain="current", **result_files())
    with_study_zh = render(table, "zh", primary_toolchain="current", **result_files())
    core = {anchor: s for anchor, s in sections.REGISTRY.items() if s not in sections.studies()}
    monkeypatch.setattr(sections, "REGISTRY", core)  # the core's sections only
    without = render(table, "en", primary_toolchain="current", **result_files())
    assert with_study.index('<section id="timing-model">') < with_study.index('<section id="then-and-now">')
    assert '<a href="#then-and-now">' in with_study and "then_and_now.csv" in first_page(with_study)
    assert "gives the post&#39;s VMEM verdict for 1 of 2" in with_study
    assert "holds with the post&#39;s compiler" in with_study
    for text in ('id="then-and-now"', 'href="#then-and-now"', "then_and_now", "VMEM verdict for",
                 "with the post&#39;s compiler"):
        assert text not in without, text
    assert "claims.csv, fidelity.csv, best_vs_xla.csv." in first_page(without)
    assert "</html>" in without
    # the claims section names the files its rows come from: the study's only where it added some
    def claims_section(html):
        return html[html.index('<section id="claims">'):].split("</section>")[0]
    assert "checked against this run (results/claims.csv, results/then_and_now_claims.csv):" \
        in claims_section(with_study)
    assert "checked against this run (results/claims.csv):" in claims_section(without)
    assert "（results/claims.csv、results/then_and_now_claims.csv）" in claims_section(with_study_zh)


def test_a_study_s_section_follows_the_anchor_it_names_in_the_registered_order():
    """report/sections.py places each study's section after the core section its `after` names, after
    the studies placed there before it, and last when no core section has that anchor; the order is
    of every registered core section, so a section left out of one report moves no study."""
    placed = sections.placed(["abstract", "timing-model", "generations", "cite"],
                             [("a", "timing-model"), ("b", "timing-model"), ("c", "nowhere")])
    assert placed == ["abstract", "timing-model", "a", "b", "generations", "cite", "c"]


@pytest.mark.slow
def test_statistics_name_their_file_and_no_rank_correlation_below_five_points(table):
    from tpu_matmul_repro.analysis import summaries

    html = render(table, "en", **result_files())
    model = html[html.index('<section id="timing-model">'):html.index('<section id="then-and-now">')]
    assert "0.070" in model and "61" in model and "44" in model  # fidelity.csv's numbers
    assert "0.979" not in model and "1 configurations have both" not in html  # no second source
    assert summaries.MIN_RANK_POINTS == 5


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
    from tpu_matmul_repro.figures.style import cjk_font_path

    html = render(table, "zh", for_pdf=True)
    pdf = tmp_path / "report.zh.pdf"
    build.write_pdf(html, base_url=str(tmp_path) + "/", pdf_path=pdf, font_path=cjk_font_path())
    assert pdf.read_bytes().startswith(b"%PDF")
    if not (shutil.which("pdffonts") and shutil.which("pdftotext")):
        pytest.skip("poppler-utils (pdffonts, pdftotext) not installed; .ci/run installs it")
    fonts = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True, check=True).stdout
    # the font from its file, never a system CJK font found by chance (fonts-noto-cjk: "...-JP")
    cjk = [line for line in fonts.splitlines() if "CJK" in line]
    assert cjk and all("Noto-Sans-CJK-SC" in line and " yes yes yes " in line for line in cjk), fonts
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "摘要" in text and "如何引用" in text and "环境与数据来源" in text
    # the abstract and key findings fill the first page and end on it: page 2 opens with the contents
    second = subprocess.run(["pdftotext", "-f", "2", "-l", "2", str(pdf), "-"], capture_output=True,
                            text=True, check=True).stdout
    assert second.split()[0] == "目录", second[:200]


@pytest.mark.slow
def test_embedded_font_covers_the_page(page):
    from tpu_matmul_repro.figures.style import cjk_font_path

    html = build.embed_cjk_font(page("zh"), cjk_font_path())
    assert "@font-face" in html and "data:font/woff2;base64," in html


# --- figures people can cite, a tighter layout, natural Chinese ---------------------------------------

@pytest.mark.slow
def test_figures_are_numbered_with_anchors_captions_and_a_cite_line(table, page):
    from tpu_matmul_repro.figures.catalog import describe
    from tpu_matmul_repro.figures.figure_specs import spec_from_name

    for lang in ("en", "zh"):
        html = page(lang)
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
        assert html.count(f'<h4 id="code-{module}">') == 1 and f'href="#code-{module}"' in html
    assert 'id="code-v3_block"' not in html  # no v3 or v4 rows: no section, no listing
    assert '<h3 id="config">' in appendix and "targets: [v5e]" in appendix
    assert html.index('id="appendix"') < html.index('id="v5"')  # each experiment's detail: an appendix


@pytest.mark.slow
def test_published_column_note_only_where_the_post_published(table, page):
    html = page("en")
    assert "the post&#39;s published number" in html  # v5 on v5e has published rows
    other = render(table[table.source == "estimate"].assign(target="v6e"), "en", targets=["v6e"])
    assert "the post&#39;s published number" not in other and "parentheses" not in other
    cells = re.findall(r"<td>(.*?)</td>", html)
    assert cells and not any(") (" in re.sub(r"<[^>]+>", " ", c) for c in cells)  # no stacked parentheses


@pytest.mark.slow
def test_the_chip_of_the_post_is_sourced(page):
    en, zh = page("en"), page("zh")
    assert "v5litepod-1" in en and "does not name it" in en
    assert "v5litepod-1" in zh and "原文没有写明" in zh
    assert "on a TPU v5e" not in en


def measured_runs(runs: int, sizes):
    """XLA measured at `sizes` in `runs` runs a day apart, as the aggregate leaves such rows; run d's
    samples are (1 + d / 10) * 100 us."""
    from tpu_matmul_repro.experiments.core.schema import conform, frame
    from tpu_matmul_repro.experiments.measure.statistics import derive

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
    from tpu_matmul_repro.report import tables

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
    from tpu_matmul_repro.analysis.runs import read_measured, read_results

    df = pd.concat([table, measured_runs(6, [256, 512])], ignore_index=True)
    path = tmp_path / "matmul.parquet"
    df.to_parquet(path, index=False)
    whole = render(pd.read_parquet(path))
    assert render(read_results(path), measured=read_measured(path)) == whole
    assert "in 6 runs" in measured_section(whole)


def modelled_table(table):
    """The fixture with the timing model's post-method column beside libtpu's estimate (as a run with
    a fit has it): 10 % slower than the estimate, and XLA's bfloat16 estimate at 2048 flagged."""
    df = table.copy()
    est = df.source == "estimate"
    df["model_post_tflops"] = np.where(est, df.tflops * 0.9, np.nan)
    df["estimate_nonmonotonic"] = est & (df.kernel == "xla") & (df.dtype == "bfloat16") & (df.m == 2048)
    return df


@pytest.mark.slow
def test_each_table_prints_the_column_of_the_figure_beside_it(table):
    """One estimator per view: the experiment table's cells are the numbers its figure draws, read
    from the same table (flagged estimates: neither drawn nor printed)."""
    import matplotlib.pyplot as plt

    from tpu_matmul_repro.figures import plots
    from tpu_matmul_repro.report import tables

    df = modelled_table(table)
    fig = plots.plot_experiment(df, "v5", "bfloat16", "v5e", "en")
    drawn = {}
    for line in fig.axes[0].get_lines():
        if line.get_linestyle() == "--":  # the estimates' curves
            for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True):
                drawn.setdefault(round(float(y), 1), set()).add(int(x))
    plt.close(fig)
    t = tables.experiment_table(df, "v5", "bfloat16", "v5e", lambda m: m)
    assert t["modelled"]
    cells = [c["est"] for row in t["rows"] for c in row["cells"]]
    printed = {float(c) for c in cells if c.replace(".", "").isdigit()}
    assert printed and printed == set(drawn)  # 90, 153 (v5's blocks) and 108 (XLA at 1024)
    assert 170.0 not in printed and 153.0 in printed  # the model's, not libtpu's raw 170
    xla = next(row for row in t["rows"] if row["label"] == "XLA jnp.matmul")
    assert xla["cells"][t["sizes"].index(2048)]["est"] == "flagged" and 2048 not in drawn.get(162.0, set())


def test_float32_gets_one_sentence_and_the_models_number():
    from tpu_matmul_repro.report.core_sections import float32_note

    best = [dict(target="v5e", dtype="float32", size=4096, estimator="model", fraction_of_xla=0.45,
                 best_tflops=81.0, xla_tflops=180.0)]
    constants = pd.DataFrame([dict(constant="float32_cycles_per_kib", value=0.36),
                              dict(constant="dma_cycles", value=170.5)])
    note = float32_note(best, constants, lambda m: m)
    assert "81.0 TFLOP/s at 4096, 45 % of XLA's 180.0 (DEFAULT precision)" in note
    assert "0.36 cycles per KiB" in note and "170" not in note
    assert float32_note(best, pd.DataFrame(), lambda m: m) == ""  # no fit: no sentence


def test_chinese_running_text_has_no_english(table):
    """Apart from code, file names, units and names, the Chinese report's running text is Chinese."""
    import html as entities

    constants = pd.DataFrame([dict(fit="published v5e", constant=c, value=1.0, std_error=0.1, lower=0.0,
                                   upper=2.0, at_bound=False, n_points=61)
                              for c in ("step_cycles", "float32_factor")])
    zh = render(table, "zh", primary_toolchain="current", constants=constants, **result_files())
    zh = zh[zh.index("<body>"):zh.index('<section id="appendix-code">')]
    zh = re.sub(r"<(pre|code|style|a|title)\b.*?</\1>", " ", zh, flags=re.S)
    zh = re.sub(r'<span class="cite">.*?</span>|<table class="glossary">.*?</table>', " ", zh, flags=re.S)
    text = entities.unescape(re.sub(r"<[^>]+>", " ", zh))
    names = set("""TPU XLA VMEM HBM MXU DMA Pallas JAX jax libtpu jaxlib jnp matmul TFLOP TOP MiB KiB float32
        bfloat16 int8 int32 float64 NumPy Spearman n ok PDF SVG PNG BibTeX CC BY MIT Tian Shanquan MatMul
        Kernel v1 v2 v3
        v4 v5 v5e v6e TPU v5 lite Roofline FLOP bm bk bn M K N k A B C scoped Jacobian HIGHEST NaN Inf pip jit
        cycles_method no_static_profile float32_factor x CPU https toolchains DEFAULT ln X Mosaic
        Python Linux""".split())
    words = {w for w in re.findall(r"[A-Za-z][A-Za-z0-9'’]*", text)
             if w not in names and not re.fullmatch(r"v\d\w*|[0-9a-f]{3,}", w)}
    paths = set(re.findall(r"[\w./-]*[_./][\w./-]+", text))
    left = {w for w in words if not any(w in p for p in paths)}
    assert not left, sorted(left)


@pytest.mark.slow
def test_the_gallery_numbers_the_figures_as_the_report_does(table, tmp_path):
    """Figure N is the same figure in the report and in the gallery (issue 26)."""
    from PIL import Image, PngImagePlugin

    from tpu_matmul_repro.figures.figure_specs import figure_specs
    from tpu_matmul_repro.report.gallery import page

    config = {"targets": ["v5e", "v6e"], "compile_study": {"experiments": {
        "v1": {"dtypes": ["float32"]},
        "v5": {"dtypes": ["bfloat16", "int8"], "search": {"targets": ["v5e"], "dtypes": ["bfloat16"]}}}},
        "toolchains": {"current": {"pipeline": True}}}
    specs = figure_specs(config)
    df = pd.concat([table, table[table.source == "estimate"].assign(target="v6e")], ignore_index=True)
    html = render(df, "en", targets=["v5e", "v6e"], figure_names=specs)
    in_report = {name: int(n) for name, n in
                 re.findall(r'<a class="fignum" href="#fig-([^"]+)">Figure (\d+)\.</a>', html)}
    for name in specs:  # the gallery reads each PNG's title; the numbers are what is compared here
        title = PngImagePlugin.PngInfo()
        title.add_text("Title", name)
        Image.new("RGB", (1, 1)).save(tmp_path / f"{name}.png", pnginfo=title)
    gallery = page(df, specs, "en", tmp_path)
    in_gallery = {name: int(n) for name, n in
                  re.findall(r'<section class="card" id="([^"]+)">\n<h2>Figure (\d+)\.', gallery)}
    assert len(in_report) >= 8 and in_report == {n: i for n, i in in_gallery.items() if n in in_report}


def advice_table() -> pd.DataFrame:
    """An advisor table (results/advice/<shape>.csv) of two targets: three blocks, one tie, and XLA."""
    def row(target, kernel, rank, blocks, tflops, tie=None):
        bm, bk, bn = blocks
        ms = 2 * 8192 * 4096 * 14336 / tflops / 1e9
        return dict(target=target, m=8192, k=4096, n=14336, kernel=kernel, rank=rank, bm=bm, bk=bk, bn=bn,
                    status="ok", tie=tie, padded_shape=None, lower_bound_seconds=None,
                    vmem_mib=12.5 if kernel != "xla" else None, vmem_limit_mib=16.0,
                    model_device_tflops=tflops, model_device_tflops_lo80=tflops / 1.15,
                    model_device_tflops_hi80=tflops * 1.15, model_device_ms=ms,
                    model_device_ms_hi80=ms * 1.15, model_device_tflops_lo95=tflops / 1.3,
                    model_device_tflops_hi95=tflops * 1.3, dtype="bfloat16", libtpu_version="0.0.42.1")

    return pd.DataFrame([
        row("v5e", "v5", 1.0, (1024, 512, 1024), 189.0),
        row("v5e", "v5", 2.0, (512, 1024, 1024), 180.0, "tie"),
        row("v5e", "v5", 3.0, (256, 256, 256), 120.0), row("v5e", "xla", None, (None,) * 3, 192.9),
        row("v6e", "v5", 1.0, (1024, 1024, 2048), 787.0), row("v6e", "xla", None, (None,) * 3, 844.6)])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_advice_section_prints_the_advisor_s_best_blocks_with_their_interval(table, page, lang):
    html = render(table, lang, advice={"8192x4096x14336": advice_table()})
    section = html[html.index('<section id="advice">'):]
    section = section[:section.index("</section>")]
    assert "8192 × 4096 × 14336" in section
    assert "(1024, 512, 1024)" in section and "(1024, 1024, 2048)" in section
    assert "189 [164–217]" in section and "193 [168–222]" in section  # best, and XLA, with the 80 % band
    assert "v6e †" in section and "v5e †" not in section  # off v5e: no measurement checks the band
    # the figure in the report's language, numbered and captioned as the others (figures/advice_figure.py),
    # in the appendix
    section = html[html.index('<section id="appendix-advice">'):]
    section = section[:section.index("</section>")]
    assert f'src="../advice/8192x4096x14336{"" if lang == "en" else ".zh"}.png"' in section
    assert re.search(r'<a class="fignum" href="#fig-advice_8192x4096x14336">(Figure|图) \d+', section)
    assert ("blocks for 8192×4096×14336 in bfloat16" in section) == (lang == "en")
    recommended = "XLA is modelled 2 % faster" if lang == "en" else "XLA 比最优分块"
    # the advisor's recommendation line, in the section
    body = html[html.index('<section id="advice">'):html.index('<section id="appendix-advice">')]
    assert recommended in body
    assert '<section id="advice">' not in page(lang)  # no advice asked for, no section


# --- issue 40: the report's language and layout ---------------------------------------------------------

def two_toolchains(table):
    """The fixture under today's compiler and the post's (whose older libtpu compiled the v5 block that
    today runs out of VMEM): the run a default config makes, with its then-and-now section."""
    from tpu_matmul_repro.analysis.aggregate import combine

    now = table[table.source == "estimate"].assign(toolchain="current")
    v2 = now[(now.kernel == "v1") & (now.m == 1024)]
    v2 = v2.assign(experiment="v2", kernel="v2", bm=256, bk=1024, bn=256)
    now = pd.concat([now, v2], ignore_index=True)  # v2's section, which names the contraction dimension
    then = now.copy().assign(toolchain="post", libtpu_version="0.0.5", jax_version="0.4.36")
    then.loc[(then.kernel == "v5") & (then.bm == 1024), "status"] = "ok"
    return combine([now, then], table[table.source == "published"], toolchain="current")


@pytest.fixture(scope="module")
def full_page(table):
    """`full_page(lang)`: the report of two toolchains with every result file and the fitted constants,
    as the default config's run has them."""
    from tpu_matmul_repro.studies.then_and_now.analysis import then_and_now

    constants = pd.DataFrame([dict(fit="published v5e", constant=c, value=1.0, std_error=0.1, lower=0.0,
                                   upper=2.0, at_bound=c == "step_cycles", n_points=61)  # "(at a bound)"
                              for c in ("step_cycles", "float32_factor")])
    pages = {}

    def made(lang):
        if lang not in pages:
            df = two_toolchains(table)
            files = result_files() | {"study_tables": {"then_and_now": then_and_now(df, "current")}}
            pages[lang] = render(df, lang, primary_toolchain="current", constants=constants, **files)
        return pages[lang]

    return made


def body_text(html: str) -> str:
    """What a reader reads of the page before the kernel code (the glossary's own table left out)."""
    from tpu_matmul_repro.report.typography import visible_text

    html = html[:html.index('<section id="appendix-code">')]
    return visible_text(re.sub(r'<table class="glossary">.*?</table>', " ", html, flags=re.S))


@pytest.mark.slow
def test_the_chinese_page_uses_chinese_punctuation(full_page):
    """Every line a reader sees of the zh report: full-width punctuation in Chinese text, no space
    after it, 80% without a space (report/typography.py; the catalog is held to the same rules)."""
    from tpu_matmul_repro.report.typography import punctuation_problems

    problems = [p for line in body_text(full_page("zh")).splitlines() for p in punctuation_problems(line)]
    assert not problems, problems[:8]
    text = body_text(full_page("zh"))
    assert re.search(r"\d%", text) and not re.search(r"\d %", text)


@pytest.mark.slow
def test_chinese_keeps_a_space_beside_numbers_and_latin_words(full_page):
    """Wherever a template fills a Chinese sentence ("按%(compiler)s" with "2026 年中的编译器"), the
    page sets a space between Chinese and a number or a Latin word; the rule is the page's, not each
    translation's."""
    from tpu_matmul_repro.report.typography import glued, space_cjk

    # the post's number under a cell's is a line of its own (.pub: display: block)
    assert not glued(body_text(full_page("zh").replace('<span class="pub">', '<br><span class="pub">')))
    assert space_cjk("<p>按2026 年，18.4 MiB失败</p>") == "<p>按 2026 年，18.4 MiB 失败</p>"
    assert space_cjk("<pre>x=按2026</pre><b>在</b>v5e") == "<pre>x=按2026</pre><b>在</b>v5e"


@pytest.mark.slow
def test_the_toolchains_are_named_not_shown_by_their_ids(full_page):
    """The config's toolchain ids (post, current) are internal: the page names them "the post's compiler"
    and "today's compiler" (原文当年的编译器, 今天的编译器) in its tables, headers and sentences."""
    zh, en = body_text(full_page("zh")), body_text(full_page("en"))
    assert not re.search(r"\b(post|current)\b", zh), re.findall(r".{20}\b(?:post|current)\b.{20}", zh)[:3]
    assert "原文当年的编译器（libtpu 0.0.5）" in zh and "今天的编译器（libtpu 0.0.42.1）" in zh
    assert not re.search(r"\b(post|current) \(libtpu", en) and "The post's compiler (libtpu 0.0.5)" in en
    assert "<td>current</td>" not in full_page("en")


@pytest.mark.slow
@pytest.mark.parametrize("lang, vmem, mxu", [("zh", "向量内存（VMEM）", "矩阵乘法单元（MXU）"),
                                             ("en", "vector memory (VMEM)", "matrix unit (MXU)")])
def test_vmem_and_the_mxu_are_explained_where_they_first_appear(full_page, lang, vmem, mxu):
    text = body_text(full_page(lang))
    for term, gloss in (("VMEM", vmem), ("MXU", mxu)):
        first = text.index(term)
        assert text[first - gloss.index(term):first + len(term)] == gloss[:gloss.index(term) + len(term)], (
            term, text[max(0, first - 30):first + 10])


@pytest.mark.slow
def test_every_glossary_term_is_used_in_the_report(full_page):
    """The appendix's glossary lists the words the page uses: each term (each side of a "/") appears in
    the running text, 脉动阵列 too, not only in the glossary."""
    from tpu_matmul_repro.experiments.core.i18n import glossary

    text = body_text(full_page("zh"))
    missing = [part for _, term in glossary("zh")[0] for part in re.split(r" / |：", term)
               if part.strip() not in text and part not in ("未检验",)]  # no claim of the fixture is untested
    assert not missing, missing


@pytest.mark.parametrize("counts, en, zh", [
    (dict(holds=1, differs=1), "Of the post's 2 claims, 1 holds and 1 differs.",
     "原文的 2 条论断中，1 条成立，1 条不符。"),
    (dict(holds=4, differs=1, inconclusive=2),
     "Of the post's 7 claims, 4 hold, 1 differs and 2 are inconclusive within the timing model's 80 % "
     "interval.", "原文的 7 条论断中，4 条成立，1 条不符，2 条在计时模型的 80% 区间内无定论。"),
    (dict(differs=1), "Of the post's 1 claim, 1 differs.", "原文的 1 条论断中，1 条不符。"),
    (dict(holds=2, untested=1),
     "Of the post's 3 claims, 2 hold and 1 could not be tested with this run's data.",
     "原文的 3 条论断中，2 条成立，1 条因本次运行缺少数据而无法检验。"),
])
def test_the_verdict_counts_have_their_plurals(counts, en, zh):
    from tpu_matmul_repro.experiments.core.i18n import translations
    from tpu_matmul_repro.report.front import verdict_counts

    front = dict(dict(holds=0, differs=0, inconclusive=0, untested=0), **counts)
    front["n_claims"] = sum(front.values())
    assert verdict_counts(front, translations("en"), "en") == en
    assert verdict_counts(front, translations("zh"), "zh") == zh


def test_a_number_keeps_its_unit_on_its_line():
    from tpu_matmul_repro.report.typography import keep_units, without_unit_spans

    html = ('<title>75.1 TFLOP/s</title><p title="80 %">at 75.1 TFLOP/s, 80 % of 16 MiB; 80%</p>'
            '<pre>x = 16 MiB</pre>')
    kept = keep_units(html)
    assert ('<p title="80 %">at <span class="nb">75.1 TFLOP/s</span>, <span class="nb">80 %</span> of '
            '<span class="nb">16 MiB</span>; <span class="nb">80%</span></p>') in kept
    assert kept.startswith("<title>75.1 TFLOP/s</title>") and kept.endswith("<pre>x = 16 MiB</pre>")
    assert without_unit_spans(kept) == html
    tuple_html = "<p>最优分块 (512, 1024, 1024) 与 (1024, 512)</p>"
    assert keep_units(tuple_html) == ('<p>最优分块 <span class="nb">(512, 1024, 1024)</span> 与 '
                                      '<span class="nb">(1024, 512)</span></p>')
    css = (build.TEMPLATES / "style.css").read_text()
    assert re.search(r"\.nb \{ white-space: nowrap; \}", css)


@pytest.mark.slow
def test_every_wide_table_scrolls_or_is_cards(full_page):
    """The one rule for a narrow screen (style.css): a table of sentences is cards, every other table
    sits in a frame that scrolls sideways; none is left to overflow the page."""
    for lang in ("en", "zh"):
        html = full_page(lang)
        for m in re.finditer(r"<table\b[^>]*>", html):
            before = html[max(0, m.start() - 40):m.start()]
            assert '<div class="table-wrap">' in before or 'class="findings"' in m.group(0), (lang, before)


def printed_lines(html: str, tag: str = "pre"):
    """Each line box WeasyPrint sets inside the page's <pre>, as (its text boxes' (x, text), its right
    edge), and the page's content right edge: the printed layout, read without a PDF reader."""
    import weasyprint
    from weasyprint.formatting_structure import boxes

    from tpu_matmul_repro.figures.style import cjk_font_path

    stylesheets, fonts = build.pdf_stylesheets(html, cjk_font_path())
    document = weasyprint.HTML(string=html).render(stylesheets=stylesheets, font_config=fonts)
    lines, right = [], None

    def walk(box, inside):
        if isinstance(box, boxes.LineBox) and inside:
            texts = [b for b in box.descendants() if isinstance(b, boxes.TextBox)]
            lines.append(([(t.position_x, t.text, t.width) for t in texts],
                          max((t.position_x + t.width for t in texts), default=0)))
            return
        for child in getattr(box, "children", []):
            walk(child, inside or getattr(box, "element_tag", None) == tag)

    for page in document.pages:
        walk(page._page_box, False)
        right = page._page_box.content_box_x() + page._page_box.width
    return lines, right


@pytest.mark.slow
@pytest.mark.parametrize("path", ["kernels/v3_block.py", "kernels/v5_accumulator.py"])
def test_printed_code_keeps_every_line_whole_and_its_indentation(path):
    """The PDF's kernel listing sets each line of the file on one printed line (type as small as its
    longest line needs, never wrapped), at the column of its indentation: what it prints is the file."""
    css = (build.TEMPLATES / "style.css").read_text()
    html = (f'<html><head><meta charset="utf-8"><style>{css}</style></head><body>'
            f'<section id="appendix-code">{core_sections.highlight(path)}</section></body></html>')
    lines, right = printed_lines(html)
    source = (build.ROOT / path).read_text().splitlines()
    assert len(lines) == len(source)  # not one line wrapped
    x0 = min(texts[0][0] for texts, _ in lines if texts)
    advance = next(width / len(text) for _, text, width in (t for texts, _ in lines for t in texts)
                   if len(text) > 20)
    printed = []
    for texts, edge in lines:
        assert edge <= right + 0.5  # within the page
        line = ""  # each text box's characters at the column where it is printed
        for x, text, _ in texts:
            line = line.ljust(round((x - x0) / advance))[:round((x - x0) / advance)] + text
        printed.append(line.rstrip())
    assert printed == [line.rstrip() for line in source]


@pytest.mark.slow
def test_the_pdf_carries_the_kernels_it_lists(table, tmp_path):
    """Code copied from a PDF page loses its indentation in many readers: the PDF embeds each listed
    kernel file, dated by the build so that the same run gives the same bytes."""
    from tpu_matmul_repro.figures.style import cjk_font_path

    html = render(table, "en", for_pdf=True)
    assert "carries each file below as an attachment" in html
    assert "carries each file below" not in render(table, "en")  # the HTML page shows the code as is
    paths = build.listing_paths(table)
    assert paths and all(p.startswith("kernels/") for p in paths)
    pdfs = [tmp_path / f"{i}.pdf" for i in range(2)]
    for pdf in pdfs:
        build.write_pdf(html, base_url=str(tmp_path) + "/", pdf_path=pdf, font_path=cjk_font_path(),
                        attachments=paths)
    data = pdfs[0].read_bytes()
    assert data.count(b"/EmbeddedFile") >= len(paths) and pdfs[1].read_bytes() == data
    if not shutil.which("pdfdetach"):
        pytest.skip("poppler-utils (pdfdetach) not installed; .ci/run installs it")
    out = tmp_path / "attached"
    out.mkdir()
    subprocess.run(["pdfdetach", "-saveall", "-o", str(out), str(pdfs[0])], check=True)
    for path in paths:
        assert (out / path.replace("/", "_")).read_bytes() == (build.ROOT / path).read_bytes()


def test_the_outputs_page_lists_what_the_code_writes():
    """docs/outputs.md names every verdict claims.csv can hold, every kind of number the figures name and
    the table's key, as the code defines them (issue 40: the list lacked `inconclusive`)."""
    from tpu_matmul_repro.analysis.claims import VERDICTS
    from tpu_matmul_repro.experiments.core.schema import KEY
    from tpu_matmul_repro.figures.labels import SOURCE_NAMES

    page = (build.ROOT / "docs" / "outputs.md").read_text()
    listed = re.search(r"a verdict \(([^)]*)\)", page).group(1).split(" / ")
    assert listed == list(VERDICTS)
    kinds = re.search(r"Every number is one of four kinds.*?\n\n", page, re.S).group(0)
    assert all(f"**{name}**" in kinds for name in SOURCE_NAMES.values()), kinds
    key = re.search(r"One row per \(([^)]*)\)", page.replace("\n", " ")).group(1)
    assert [c.strip() for c in key.split(",")] == list(KEY)


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.skipif(mechanism_text.read()[0] is None,
                    reason="studies/then_and_now/data/mechanism*.csv not written yet")
def test_the_then_and_now_section_carries_its_mechanism_sentences(table, lang):
    """The then-and-now section's sentences on which component doubled the VMEM request
    (studies/then_and_now/tests/test_mechanism.py checks them against its data) are in the page."""
    import html as entities

    from tpu_matmul_repro.experiments.core.i18n import translations
    from tpu_matmul_repro.experiments.plan.studies import load as load_studies

    load_studies(["then_and_now"])
    page = entities.unescape(build.render_html(
        table, lang=lang, config_yaml="targets: [v5e]\n", targets=["v5e"], figure_names=set(),
        correctness={"passed": 1, "total": 1}, primary_toolchain="current"))
    # in the appendix's then-and-now part where the run compared toolchains, else in the section
    anchor = '<section id="appendix-then-and-now">' if '<section id="appendix-then-and-now">' in page else \
        '<section id="then-and-now">'
    section = page[page.index(anchor):]
    section = section[:section.index("</section>")]
    section = re.sub(r"<span[^>]*>|</span>", "", section)  # the report keeps "9.07 MiB" on one line
    gettext = translations(lang).gettext if lang == "zh" else (lambda message: message)
    for sentence in mechanism_text.sentences(*mechanism_text.read(), gettext):
        assert sentence in section
    assert gettext("Which component doubled the request") in section
    assert ("。 " not in section and "。（" in section) if lang == "zh" else (". (Estimates" in section)


def test_the_methods_name_the_model_s_inputs_from_its_fit(table):
    """Methods and the introduction say what the timing model reads (the compiler's VMEM verdict and
    request, XLA's cost-model cycles) and list the constants timing_model.csv holds, with their values;
    libtpu's static-profile cycles are said not to be an input."""
    import html as entities

    constants = pd.DataFrame([dict(fit="published v5e", constant=c, value=v, std_error=0.1, lower=0.0,
                                   upper=2000.0, at_bound=False, n_points=61, unit="")
                              for c, v in (("step_cycles", 350.28), ("call_seconds", 1.05e-4),
                                           ("float32_factor", 1.23))])
    html = render(table, "en", primary_toolchain="current", constants=constants, **result_files())
    methods = entities.unescape(re.sub(r"<[^>]+>", "", html[html.index('<section id="methods">'):]))
    listed = "step_cycles = 350, call_seconds = 0.000105, float32_factor = 1.23 fitted"
    assert listed in methods, methods[methods.index("The time"):][:400]
    assert "static-profile cycles of the Pallas kernels are not an input" in methods
    assert "Cycles come from libtpu's static profile" not in html
    assert "libtpu's cycles turned into time" not in html
    bare = render(table, "en", primary_toolchain="current", **result_files())
    assert "too few of the post's points to fit its constants" in bare


def test_a_compile_claim_where_no_size_fails_says_so_not_fails_from_a_dash():
    """Where no size both sides tried fails, the reason and the findings cells say "every size up to",
    never "fails from –" (a missing value read as a size)."""
    from tpu_matmul_repro.analysis.claims import reason_text
    from tpu_matmul_repro.report import front

    values = dict(ok=2048, fail="–", limit=16, post_ok=2048, post_fail="–")
    for reason_id in ("feasible_same", "feasible_differs"):
        text = reason_text(reason_id, "", values)
        assert "every size up to 2048" in text and "–" not in text
    for messages in (front.POST_CELLS, front.RUN_CELLS):
        assert front.cell(messages, "compiles", values, lambda m: m) == "compiles at every size up to 2048"
    failing = dict(values, fail=4096, post_fail=4096)
    assert front.cell(front.RUN_CELLS, "compiles", failing, lambda m: m) == \
        "compiles up to 2048, fails from 4096"
    assert "fails from 4096" in reason_text("feasible_same", "", failing)


def test_a_reason_of_untested_claims_is_said_once_below_the_table():
    """The claims appendix gives a reason that several untested claims share once, as a note, and each
    of those rows its mark; a tested claim's reason stays in its row."""
    from tpu_matmul_repro.report import core_sections

    missing = "This run has none of the numbers this claim needs."
    rows = [dict(claim=f"c{n}", reason=missing, tested=False) for n in range(3)] + [
        dict(claim="c3", reason="Compiles up to 1024.", tested=True),
        dict(claim="c4", reason="Compiles up to 1024.", tested=True)]

    class Inputs:
        model = {"claims": rows}

    made = core_sections.appendix_claims(Inputs())
    assert made["claim_notes"] == [dict(mark="*", reason=missing)]
    assert [r["mark"] for r in made["claim_rows"]] == ["*", "*", "*", "", ""]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_generations_table_says_why_no_cycles_in_words(table, lang):
    """The appendix's table of how each target's numbers were obtained gives each reason for no cycles
    as the figures' notes word it, never the cycles_method code it comes from."""
    from tpu_matmul_repro.figures.labels import text

    est = table[table.source == "estimate"]
    pallas = est.kernel != "xla"
    v6e = est.assign(target="v6e", cycles_method=np.where(pallas, "over_profile_max_steps", ""))
    rows = pd.concat([est.assign(cycles_method=np.where(pallas, "no_static_profile", "")), v6e])
    rows = rows.assign(tflops=np.where(rows.kernel != "xla", np.nan, rows.tflops), toolchain="current")

    class Inputs:
        gettext = staticmethod(lambda message: message)

    Inputs.rows, Inputs.lang = rows, lang
    made = {r["target"]: r["no_cycles_because"] for r in core_sections.methods_rows(Inputs())}
    assert made == {"v5e": text(lang, "reason_no_static_profile"),
                    "v6e": text(lang, "reason_over_profile_max_steps")}
    assert not any(code in why for why in made.values() for code in ("no_static_profile", "over_profile_max"))
