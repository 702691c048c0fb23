"""Every figure function on a small synthetic table: failed configurations, a missing source, one
target; Chinese labels with no missing glyph; identical bytes for an identical table."""
import warnings

import pandas as pd
import pytest

from tpu_matmul_repro.experiments.plan.studies import load as load_studies
from tpu_matmul_repro.figures import plots
from tpu_matmul_repro.figures.catalog import CATALOG, describe, render
from tpu_matmul_repro.figures.figure_specs import NARROW_KINDS, STUDY_SPECS, figure_specs, stem

load_studies(["then_and_now"])  # the default config's study: its kind of figure
CONFIG = {"targets": ["v5e"], "compile_study": {"experiments": {
    "v1": {"kernel": "v1", "dtypes": ["float32"]},
    "v5": {"kernel": "v5", "dtypes": ["bfloat16"], "search": {}},
}}}


def test_a_study_s_figure_comes_with_its_config_and_draws_every_toolchain():
    from tpu_matmul_repro.studies.then_and_now.specs import figure_specs as study_specs

    toolchains = {"toolchains": {"current": {"pipeline": True},
                                 "post": {"pins": {"jax": "0.4.36"}, "runs": "published"}}}
    assert study_specs(CONFIG, ["v5e"]) == {}  # one toolchain: nothing to compare
    assert figure_specs({**CONFIG, **toolchains})["then_and_now_v5e"] == (
        "then_and_now", {"target": "v5e", "primary": "current"})
    assert CATALOG["then_and_now"].every_toolchain and not CATALOG["experiment"].every_toolchain


def test_single_target_config_has_no_generations_figure():
    names = figure_specs(CONFIG)
    assert "v5_bfloat16_v5e" in names and "search_v5_bfloat16_v5e" in names and "fidelity_v5e" in names
    assert not any(n.startswith("generations") for n in names)
    two = figure_specs({**CONFIG, "targets": ["v5e", "v6e"]})
    assert "generations_v5_bfloat16" in two and "fidelity_v6e" not in two


SPECS = figure_specs({**CONFIG, "targets": ["v5e", "v6e"]})  # v6e has no rows: "no data" figures
DRAWN = pytest.mark.xdist_group("figures_drawn")  # the tests that read `drawn`'s files: one worker draws


@pytest.fixture(scope="module")
def drawn(table, tmp_path_factory):
    """`drawn(name)`: the files of figure `name` of SPECS (both languages, every format), drawn from the
    `table` fixture once for the tests that read them, with a glyph missing from the fonts an error."""
    directory, paths = tmp_path_factory.mktemp("drawn"), {}

    def draw(name: str) -> list:
        if name not in paths:
            kind, args = SPECS[name]
            with warnings.catch_warnings():
                warnings.filterwarnings("error", message=".*Glyph.*missing.*")
                paths[name] = render(table, name, kind, args, directory)
        return paths[name]

    return draw


@pytest.mark.slow
@DRAWN
@pytest.mark.parametrize("name", list(SPECS))
def test_every_figure_renders_in_both_languages_without_missing_glyphs(drawn, name):
    paths = drawn(name)
    narrow = 2 if SPECS[name][0] in NARROW_KINDS else 0  # the phone's variants, a PNG per language
    assert len(paths) == 6 + narrow and all(p.stat().st_size > 1000 for p in paths)


@pytest.mark.slow
def test_figures_render_without_published_rows(table, tmp_path):
    estimates_only = table[table.source == "estimate"]
    for kind in CATALOG:
        args = ({"target": "v5e"} if kind in ("vmem", "roofline", "fidelity", "then_and_now")
                else {"experiment": "v5", "dtype": "bfloat16"})
        if kind in ("experiment", "search"):
            args["target"] = "v5e"
        render(estimates_only, f"{kind}_only", kind, args, tmp_path)


@pytest.mark.slow
@DRAWN
def test_two_renders_are_byte_identical(table, drawn, tmp_path):
    """The same table draws the same bytes, whatever the process drew before (`drawn` drew others)."""
    first = drawn("v5_bfloat16_v5e")
    second = render(table, "v5_bfloat16_v5e", "experiment",
                    dict(experiment="v5", dtype="bfloat16", target="v5e"), tmp_path)
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


@pytest.mark.slow
def test_all_figures_in_one_job_give_the_same_bytes_in_one_process_or_two(table, tmp_path):
    """figures/batch.py: the figures job draws in as many processes as it has threads; the files do not
    depend on how many, nor on which figures shared a process."""
    from tpu_matmul_repro.figures import batch
    from tpu_matmul_repro.figures.batch import render_all

    core = set(CATALOG) - set(STUDY_SPECS)  # a study's kinds are drawn after experiment
    assert set(batch.SLOWEST_FIRST) == core  # every kind of the core has its place in the drawing order
    path = tmp_path / "table.parquet"
    table.to_parquet(path)
    specs = {name: spec for name, spec in figure_specs(CONFIG).items()
             if name in ("v5_bfloat16_v5e", "search_v5_bfloat16_v5e", "vmem_v5e")}
    assert len(specs) == 3
    one = render_all(path, specs, tmp_path / "one")
    log = tmp_path / "figures.log"
    two = render_all(path, specs, tmp_path / "two", processes=2, log_path=log)
    assert batch._df is None  # the table was read in the worker processes, not here
    assert log.exists()  # where the workers' stderr went
    narrow = sum(2 for kind, _ in specs.values() if kind in NARROW_KINDS)  # the phone's PNGs
    assert [p.name for p in one] == [p.name for p in two] and len(one) == 6 * len(specs) + narrow
    for a, b in zip(one, two, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
    with pytest.raises(ValueError, match="processes=0"):
        render_all(path, specs, tmp_path / "none", processes=0)


@pytest.mark.slow
def test_the_post_s_five_blocks_with_xla_keep_the_layout(tmp_path):
    """v4 and v5 draw six series and two source keys: the legend must fit the figure's width, or
    Matplotlib's constrained layout gives up and the plot shrinks to a strip (seen before the legend
    went to two columns there)."""
    from conftest import VERSIONS, row

    from tpu_matmul_repro.analysis.aggregate import combine
    from tpu_matmul_repro.experiments.core.schema import frame

    blocks = [(128, 128, 128), (256, 256, 256), (512, 512, 512), (512, 1024, 1024), (1024, 1024, 1024)]
    rows = [row("v5", "v5", "bfloat16", size, b, tflops=size / 50) for size in (1024, 2048) for b in blocks]
    rows += [row("xla", "xla", "bfloat16", size, tflops=size / 40) for size in (1024, 2048)]
    published = frame([row("v5", "v5", "bfloat16", 2048, b, tflops=30.0, source="published", limit=None)
                       for b in blocks], {}).drop(columns=["jax_version", "libtpu_version", "git_sha"])
    table = combine([frame(rows, VERSIONS)], published)
    table["model_post_tflops"] = table.tflops.where(table.source == "estimate")  # the timing model's key
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*constrained_layout not applied.*")
        for lang in ("en", "zh"):
            render(table, "v5_bfloat16_v5e", "experiment",
                   dict(experiment="v5", dtype="bfloat16", target="v5e"), tmp_path / lang)


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_figure_is_laid_out_once_and_its_three_formats_cut_alike(tmp_path, lang):
    """save() lays a figure out once (as for its PNG) and draws it once per format: savefig with
    bbox_inches="tight" laid it out and drew it again per format to measure it, and the formats came
    out with layouts of their own (PDFs up to 17 pt wider than their PNG)."""
    import re

    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure
    from PIL import Image

    from tpu_matmul_repro.figures import style

    style.use_style(lang)
    fig, ax = plt.subplots()
    ax.plot([512, 8192], [3.0, 180.0], label="v5 (512, 1024, 1024)")
    ax.set(xscale="log", title="TFLOP/s 吞吐量" if lang == "zh" else "TFLOP/s", xlabel="M = K = N")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2))  # below the axes, as the notes are
    draws = []
    original = Figure.draw

    def counted(figure, renderer):
        draws.append(type(renderer).__name__)
        return original(figure, renderer)

    try:
        Figure.draw = counted
        paths = style.save(fig, tmp_path / "f", {"title": "t", "caption": "c", "sources": "s",
                                                 "licence": "l", "post_url": "u", "commit": "c"})
    finally:
        Figure.draw = original
    assert [p.suffix for p in paths] == [".png", ".svg", ".pdf"]
    assert len(draws) == 4, draws  # one layout, then one drawing per file
    width_px, height_px = Image.open(paths[0]).size
    point = 72 / plt.rcParams["savefig.dpi"]  # a PNG pixel, in points
    svg = re.search(r'width="([\d.]+)pt" height="([\d.]+)pt"', paths[1].read_text())
    pdf = re.search(rb"/MediaBox \[\s*0 0 ([\d.]+) ([\d.]+)", paths[2].read_bytes())
    for width, height in (svg.groups(), pdf.groups()):
        assert abs(float(width) - width_px * point) <= point
        assert abs(float(height) - height_px * point) <= point
    assert height_px * point > 4.2 * 72  # the legend below the axes is in the file: taller than the figure


def test_chinese_names_add_the_language():
    assert stem("d", "v5_bfloat16_v5e", "zh").name == "v5_bfloat16_v5e.zh"
    assert stem("d", "v5_bfloat16_v5e", "en").name == "v5_bfloat16_v5e"


def test_missing_glyph_is_detected(tmp_path):
    # The check itself can fail: the Latin font alone cannot draw Chinese.
    import matplotlib.pyplot as plt

    from tpu_matmul_repro.figures.style import use_style

    use_style("en")
    fig, ax = plt.subplots()
    ax.set_title("矩阵乘法")
    with warnings.catch_warnings(), pytest.raises(UserWarning, match="missing from font"):
        warnings.filterwarnings("error", message=".*Glyph.*missing.*")
        fig.savefig(tmp_path / "x.png")
    plt.close(fig)


@pytest.mark.slow
def test_table_without_new_columns_still_draws(table, tmp_path):
    old = table.drop(columns=["search", "peak_tflops"], errors="ignore")
    render(old, "v1_float32_v5e", "experiment", dict(experiment="v1", dtype="float32", target="v5e"),
           tmp_path)


# --- self-describing figures: caption, alt text and provenance -----------------------------------------

def pdf_info(path) -> dict:
    """The PDF's info dictionary (Matplotlib writes it uncompressed), strings decoded."""
    import re

    data = path.read_bytes()
    info = {}
    for key in ("Title", "Author", "Subject", "Keywords", "Creator", "Producer", "CreationDate"):
        m = re.search(rb"/" + key.encode() + rb" \(((?:\\.|[^\\)])*)\)", data, re.S)
        if m:
            raw = re.sub(rb"\\([\\()])", rb"\1", m.group(1))
            raw = re.sub(rb"\\(\d{3})", lambda o: bytes([int(o.group(1), 8)]), raw)
            raw = raw.replace(rb"\n", b"\n").replace(rb"\r", b"\r")
            utf16 = raw.startswith(b"\xfe\xff")
            info[key] = raw[2:].decode("utf-16-be") if utf16 else raw.decode("latin-1")
    return info


def svg_metadata(path) -> dict:
    import xml.etree.ElementTree as ET

    dc = "{http://purl.org/dc/elements/1.1/}"
    root = ET.parse(path).getroot()
    out = {}
    for element in root.iter():
        if element.tag.startswith(dc):
            words = (t.strip() for t in element.itertext() if t.strip())
            out.setdefault(element.tag[len(dc):], " ".join(words))
    return out


@pytest.mark.slow
@DRAWN
@pytest.mark.parametrize("name", ["v5_bfloat16_v5e", "vmem_v5e", "roofline_v5e", "search_v5_bfloat16_v5e",
                                  "fidelity_v5e", "generations_v5_bfloat16"])
def test_every_file_embeds_its_provenance(table, drawn, name):
    from PIL import Image

    from tpu_matmul_repro.figures.cite import citation

    kind, args = SPECS[name]
    paths = drawn(name)
    post = citation().post_url
    for path in paths:
        lang = "zh" if ".zh." in path.name else "en"
        caption = describe(table, name, kind, args, lang)["caption"]
        if path.suffix == ".png":
            with Image.open(path) as image:
                meta = dict(image.text)
            title = meta["Title"]
            assert meta["Description"] == caption and meta["Commit"] == "abc" and meta["Post"] == post
            assert "libtpu 0.0.42.1" in meta["Toolchain"] and "jax 0.10.2" in meta["Toolchain"]
            assert "CC BY 4.0" in meta["Copyright"] and meta["Source"] and meta["AltText"]
        elif path.suffix == ".svg":
            meta = svg_metadata(path)
            title = meta["title"]
            assert caption in meta["description"] and "Commit: abc" in meta["description"]
            assert "libtpu 0.0.42.1" in meta["description"] and post in meta["relation"]
            assert "CC BY 4.0" in meta["rights"] and meta["source"] and "date" not in meta
        else:
            meta = pdf_info(path)
            title = meta["Title"]
            assert meta["Subject"] == caption and "Commit: abc" in meta["Keywords"]
            assert "libtpu 0.0.42.1" in meta["Keywords"] and post in meta["Keywords"]
            assert "CC BY 4.0" in meta["Keywords"] and "CreationDate" not in meta and "Producer" not in meta
        assert title and title != name, path.name
        if name == "v5_bfloat16_v5e":  # holds estimates and the post's numbers: the title says both
            says_both = (("estimated" in title and "published" in title)
                         or ("估计" in title and "原文数据" in title))
            assert says_both, title


@pytest.mark.slow
def test_repository_url_is_embedded_once_citation_names_it(table, tmp_path, monkeypatch):
    import dataclasses

    from PIL import Image

    from tpu_matmul_repro.figures import catalog, cite

    named = dataclasses.replace(cite.citation(), repository="https://example.org/tpu-matmul-repro")
    monkeypatch.setattr(catalog, "citation", lambda: named)
    paths = render(table, "vmem_v5e", "vmem", {"target": "v5e"}, tmp_path)
    with Image.open(paths[0]) as image:
        assert image.text["Repository"] == "https://example.org/tpu-matmul-repro"
    assert "Repository: https://example.org/tpu-matmul-repro" in pdf_info(paths[2])["Keywords"]


@pytest.mark.parametrize("name", list(SPECS))
def test_every_figure_has_caption_and_alt_text_in_both_languages(table, name):
    import re

    kind, args = SPECS[name]
    for lang in ("en", "zh"):
        info = describe(table, name, kind, args, lang)
        for field in ("caption", "alt"):
            value = info[field]
            assert len(value) > 40 and "{" not in value and "}" not in value, (lang, field, value)
            assert bool(re.search(r"[\u4e00-\u9fff]", value)) == (lang == "zh"), (lang, field, value)


@pytest.mark.slow
def test_estimates_only_figure_says_estimated(table, tmp_path):
    from PIL import Image

    paths = render(table[table.source == "estimate"], "v5_bfloat16_v5e", "experiment",
                   dict(experiment="v5", dtype="bfloat16", target="v5e"), tmp_path)
    with Image.open(paths[0]) as image:
        assert "estimated" in image.text["Title"] and "published" not in image.text["Title"]
    with Image.open(paths[3]) as image:
        assert "估计" in image.text["Title"] and "原文数据" not in image.text["Title"]


def test_published_points_that_coincide_are_spread():
    import pandas as pd

    from tpu_matmul_repro.figures.plots import dodge

    points = pd.DataFrame({"m": [1024, 1024, 1024, 2048], "tflops": [50.0, 50.5, 90.0, 50.0],
                           "kernel": ["v3"] * 4, "bm": [128, 256, 512, 128], "bk": [128] * 4,
                           "bn": [128] * 4})
    order = {("blocks", bm, 128, 128): i for i, bm in enumerate((128, 256, 512))}
    offsets = dodge(points, order, span=100.0)
    assert offsets[0] < 0 < offsets[1] and offsets[2] == 0 and offsets[3] == 0


# --- the gallery --------------------------------------------------------------------------------------

@pytest.mark.slow
@DRAWN
def test_gallery_lists_every_figure_offline(table, drawn):
    import re

    from tpu_matmul_repro.report.gallery import pages, results_files

    specs = {n: SPECS[n] for n in ("v5_bfloat16_v5e", "vmem_v5e", "search_v5_bfloat16_v5e")}
    folder = {drawn(name)[0].parent for name in specs}.pop()  # where `drawn` drew them
    written = pages(table, specs, folder)
    assert set(written) == {"index.html", "index.zh.html"}
    for page_name, html in written.items():
        lang = "zh" if ".zh." in page_name else "en"
        for name in specs:
            assert f'id="{name}"' in html
            base = name if lang == "en" else f"{name}.zh"
            for fmt in ("png", "svg", "pdf"):
                assert f'href="{base}.{fmt}"' in html and (folder / f"{base}.{fmt}").is_file()
        # offline: every resource it loads is a local file
        for src in re.findall(r'src="([^"]*)"', html):
            assert not re.match(r"^(https?:)?//", src) and (folder / src).is_file(), src
        assert "<textarea" in html and "CC BY 4.0" in html and "commit abc" in html
        # the snippets carry the kind of numbers and the post's credit where it is shown
        assert ("published" in html and "田山泉" in html) if lang == "en" else ("原文数据" in html)
    files = results_files(table)
    assert set(files) == {"LICENSE.md", "ATTRIBUTION.md", "CITATION.cff"}
    assert "CC BY 4.0" in files["LICENSE.md"] and "v5litepod-1" in files["ATTRIBUTION.md"]


def test_the_cut_down_cjk_font_has_every_character_the_figures_use(tmp_path, monkeypatch):
    """The Chinese figures embed a subset of a once-cut copy of Noto Sans CJK SC (figures/style.py):
    every character of every Chinese label, the core's and the studies', must be in it (or in DejaVu
    Sans, the fallback), and it is cut again, not trusted, when absent from the cache folder."""
    from fontTools.ttLib import TTFont
    from matplotlib import font_manager

    from tpu_matmul_repro.experiments.core.i18n import translations
    from tpu_matmul_repro.figures.catalog import CATALOG
    from tpu_matmul_repro.figures.labels import LABELS
    from tpu_matmul_repro.figures.style import cjk_figure_font
    from tpu_matmul_repro.studies.history.figure import TEXT as HISTORY_TEXT
    from tpu_matmul_repro.studies.then_and_now.figure import TEXT

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = cjk_figure_font()
    assert path.is_relative_to(tmp_path) and path.stat().st_size < 2_000_000
    cut = set(TTFont(str(path)).getBestCmap())
    latin = set(TTFont(font_manager.findfont("DejaVu Sans")).getBestCmap())
    messages = [*LABELS.values(), *(e.caption for e in CATALOG.values()), *(e.alt for e in CATALOG.values()),
                *(m for m in TEXT.values() if not isinstance(m, dict)), *TEXT["verdict"].values(),
                *HISTORY_TEXT.values()]  # a study's figure too
    zh = translations("zh")
    drawn = {ch for m in messages for ch in (zh.pgettext(*m) if isinstance(m, tuple) else zh.gettext(m))}
    drawn -= {"\n"}
    missing = {ch for ch in drawn if ord(ch) not in cut | latin}
    assert not missing
    assert cjk_figure_font() == path  # the second call reuses it


@pytest.mark.slow
def test_measured_rows_with_raw_samples_draw(table, tmp_path):
    """Measured rows carry their samples as lists (unhashable): an experiment's figure, which also
    draws XLA's rows of its dtype, still picks each row once."""
    import pandas as pd

    from tpu_matmul_repro.experiments.core.schema import conform, frame
    from tpu_matmul_repro.experiments.measure.statistics import derive

    def measured(kernel, blocks, seconds):
        return dict(source="measured", target="v5e", device_kind="TPU v5 lite", experiment="v5",
                    kernel=kernel, dtype="bfloat16", m=2048, k=2048, n=2048, bm=blocks[0], bk=blocks[1],
                    bn=blocks[2], status="ok", run_label="vm", timestamp="2026-11-30T00:00:00+00:00",
                    vmem_limit_bytes=16 << 20, samples_s=[seconds] * 5, wall_samples_s=[seconds * 1.1] * 5)

    rows = derive(frame([measured("v5", (512, 1024, 1024), 1.2e-4), measured("xla", (None,) * 3, 1e-4)],
                        {"jax_version": "0.10.2", "git_sha": "abc"}))
    df = pd.concat([table, conform(rows)], ignore_index=True)
    paths = render(df, "v5_bfloat16_v5e", "experiment", dict(experiment="v5", dtype="bfloat16", target="v5e"),
                   tmp_path)
    assert len(paths) == 8  # both languages' PNG, SVG and PDF, and the phone's two PNGs
    assert "measured" in describe(df, "v5_bfloat16_v5e", "experiment",
                                  dict(experiment="v5", dtype="bfloat16", target="v5e"), "en")["sources"]


def test_generations_compare_the_posts_configurations_on_every_target(table):
    """The block search runs on some targets only: the generations figure draws the best of the post's
    own configurations (here 170 at 2048, not the searched 150/160 nor anything searched higher)."""
    searched_high = table[table.search.eq(True) & (table.status == "ok")].assign(tflops=500.0)
    df = pd.concat([table[~(table.search.eq(True) & (table.status == "ok"))], searched_high],
                   ignore_index=True)
    both = pd.concat([df, df[df.source == "estimate"].assign(target="v6e")], ignore_index=True)
    fig = plots.plot_generations(both, "v5", "bfloat16", lang="en")
    drawn = [max(line.get_ydata()) for line in fig.axes[0].get_lines() if "Pallas" in line.get_label()]
    assert drawn and max(drawn) == 170.0


@pytest.mark.slow
def test_at_most_three_lines_of_notes_under_a_plot_and_all_of_them_in_the_caption(table):
    """Notes under the plot are capped (issue 26: eight lines took a third of the figure); the caption,
    and so the file's metadata, keeps every one."""
    import matplotlib.pyplot as plt

    from tpu_matmul_repro.figures import plots

    many = table.copy()
    v5 = many[(many.source == "estimate") & (many.kernel == "v5") & (many.m == 2048) & ~many.search]
    extra = pd.concat([v5.iloc[[0]].assign(bm=b, bk=b, bn=b, status="vmem_oom", vmem_bytes=(20 + i) << 20,
                                          m=s, k=s, n=s)
                       for i, (b, s) in enumerate([(128, 1024), (256, 1024), (128, 2048), (256, 2048)])])
    many = pd.concat([many, extra], ignore_index=True)
    fig = plots.plot_experiment(many, "v5", "bfloat16", "v5e", "en")
    notes = [t.get_text() for t in fig.axes[1].texts]
    plt.close(fig)
    assert len(notes) == 1 and notes[0].count("\n") + 1 <= plots.MAX_NOTE_LINES, notes
    assert "more notes in the figure's caption" in notes[0]
    caption = describe(many, "v5_bfloat16_v5e", "experiment", dict(experiment="v5", dtype="bfloat16",
                                                                    target="v5e"), "en")["caption"]
    assert all(f"VMEM {20 + i}.0 MiB > 16 MiB" in caption for i in range(4)), caption


def legend_texts(fig) -> list[str]:
    return [t.get_text() for legend in (fig.axes[1].get_legend(),) if legend for t in legend.get_texts()]


@pytest.mark.slow
def test_the_failed_key_promises_only_what_the_notes_under_the_plot_say(table):
    """The legend's "× at zero: failed (why: below)" holds where every failure's note is drawn under the
    plot; where some are in the caption only, the key says so."""
    import matplotlib.pyplot as plt

    from tpu_matmul_repro.figures import plots

    v5 = table[(table.source == "estimate") & (table.kernel == "v5") & (table.m == 2048) & ~table.search]
    one = pd.concat([table, v5.iloc[[0]].assign(bm=128, bk=128, bn=128, status="vmem_oom",
                                               vmem_bytes=20 << 20)], ignore_index=True)
    fig = plots.plot_experiment(one, "v5", "bfloat16", "v5e", "en")
    keys, notes = legend_texts(fig), fig.axes[1].texts[0].get_text()
    plt.close(fig)
    assert "× at zero: failed (why: below)" in keys and "VMEM 20.0 MiB > 16 MiB" in notes, (keys, notes)
    sizes = [(128, 1024), (256, 1024), (128, 2048), (256, 2048), (512, 2048)]
    many = pd.concat([table] + [v5.iloc[[0]].assign(bm=b, bk=b, bn=b, status="vmem_oom", m=m, k=m, n=m,
                                                     vmem_bytes=(20 + i) << 20)
                                for i, (b, m) in enumerate(sizes)], ignore_index=True)
    fig = plots.plot_experiment(many, "v5", "bfloat16", "v5e", "en")
    keys = legend_texts(fig)
    plt.close(fig)
    assert "× at zero: failed (why: below and in the caption)" in keys, keys


@pytest.mark.slow
def test_a_band_is_named_with_its_level_in_the_legend(table):
    import matplotlib.pyplot as plt

    from tpu_matmul_repro.analysis.views import banded, experiment_rows
    from tpu_matmul_repro.figures import plots

    rows, modelled = experiment_rows(table[(table.experiment == "v5") & (table.dtype == "bfloat16")
                                           & (table.target == "v5e")])
    fig = plots.plot_experiment(table, "v5", "bfloat16", "v5e", "en")
    keys = legend_texts(fig)
    plt.close(fig)
    assert ("shaded: 80 % interval of the timing model" in keys) == (modelled and banded(rows)), keys


def test_a_compile_that_fails_where_the_post_ran_names_today_s_compiler():
    from tpu_matmul_repro.figures import plots

    row = pd.Series(dict(source="estimate", status="vmem_oom", vmem_bytes=18 << 20, oom_limit_bytes=16 << 20,
                         vmem_limit_bytes=16 << 20, error="", m=2048, kernel="v2", bm=512, bk=2048, bn=512,
                         libtpu_version="0.0.50.1", experiment="v2", dtype="float32"))
    failed = [(next(pd.DataFrame([row]).itertuples()), "Pallas v2")]
    ran = frozenset({(plots.config_key(failed[0][0]), 2048)})
    assert plots.failure_lines(failed, "en", ran) == [
        "✗ Pallas v2 @ 2048: today's compiler (libtpu 0.0.50.1) asks VMEM 18.0 MiB > 16 MiB; the post ran it"]
    assert plots.failure_lines(failed, "en") == ["✗ Pallas v2 @ 2048: VMEM 18.0 MiB > 16 MiB"]


@pytest.mark.slow
def test_flagged_estimates_are_not_drawn_in_any_figure(table):
    """The same rule everywhere: an estimate flagged as falling with size is left out and said so."""
    import matplotlib.pyplot as plt

    from tpu_matmul_repro.figures import plots

    df = table.copy()
    df["estimate_nonmonotonic"] = ((df.source == "estimate") & (df.kernel == "xla") & (df.dtype == "bfloat16")
                                   & (df.m == 2048))
    v6e = df[df.source == "estimate"].assign(target="v6e")
    for fig in (plots.plot_experiment(df, "v5", "bfloat16", "v5e", "en"),
                plots.plot_generations(pd.concat([df, v6e], ignore_index=True), "v5", "bfloat16", "en")):
        xla = [line for ax in fig.axes for line in ax.get_lines()
               if line.get_color() == plots.XLA_COLOR or "XLA" in str(line.get_label())]
        estimated = [line for line in xla if line.get_linestyle() == "--"]
        assert estimated and all(2048 not in set(line.get_xdata()) for line in estimated)
        text = " ".join(t.get_text() for t in fig.texts + [t for ax in fig.axes for t in ax.texts])
        assert "not drawn" in text, text
        plt.close(fig)


@pytest.mark.slow
def test_then_and_now_draws_the_disagreements_and_counts_the_rest(table):
    import matplotlib.pyplot as plt

    from tpu_matmul_repro.studies.then_and_now.figure import plot_then_and_now

    df = table.copy()
    df.loc[df.source == "estimate", "toolchain"] = "current"
    post = df[(df.source == "estimate") & (df.kernel != "xla")]
    post = post.assign(toolchain="post", libtpu_version="0.0.5")
    post.loc[post.kernel == "v1", "status"] = "ok"  # the post's compiler: v1 fits at 2048 too
    fig = plot_then_and_now(pd.concat([df, post], ignore_index=True), "en", primary="current")
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    title = fig.axes[0].get_title()
    plt.close(fig)
    assert labels == ["v1, 2048  [post: ✗]"], labels  # today's v1 at 2048 agrees, the post's does not
    assert "not drawn: the 2 other configurations" in title, title


@pytest.mark.slow
def test_then_and_now_says_why_a_toolchain_has_no_bar_and_labels_a_bar_at_the_limit(table):
    """A toolchain that compiled none of the rows drawn keeps its key, which says it has no bar; a bar
    within a few % of the limit (16.06 against 16 MiB) carries its value."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from tpu_matmul_repro.experiments.core.units import MiB
    from tpu_matmul_repro.studies.then_and_now.figure import plot_then_and_now

    df = table.copy()
    df.loc[df.source == "estimate", "toolchain"] = "current"
    post = df[(df.source == "estimate") & (df.kernel != "xla")]
    post = post.assign(toolchain="post", libtpu_version="0.0.5")
    post.loc[post.kernel == "v1", "status"] = "ok"
    post.loc[post.kernel == "v1", "vmem_bytes"] = int(16.06 * MiB)
    current = df[(df.source == "estimate") & (df.toolchain == "current")]
    df = df.drop(current[current.kernel == "v1"].index)  # today's compiler did not compile v1
    fig = plot_then_and_now(pd.concat([df, post], ignore_index=True), "en", primary="current")
    keys = [t.get_text() for t in fig.legends[0].get_texts()]
    marks = [t.get_text() for t in fig.axes[0].texts]
    bars = [p for p in fig.axes[0].patches if isinstance(p, Rectangle) and p.get_width() > 0]
    title = fig.axes[0].get_title()
    plt.close(fig)
    # today's compiler compiled none of v1: the rest are not ones "every toolchain agrees" on
    assert "no toolchain differs" in title and "every toolchain agrees" not in title, title
    assert any(k.startswith("Today's compiler") and "no bar" in k for k in keys), keys
    assert any(k.startswith("The post's compiler") and "no bar" not in k for k in keys), keys
    assert "16.06" in marks and len(bars) == 1, marks



@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_then_and_now_has_a_phone_variant_that_reads_at_390_px(table, lang):
    import matplotlib.pyplot as plt

    from tpu_matmul_repro.figures import layout
    from tpu_matmul_repro.figures.plots import NARROW_INCHES
    from tpu_matmul_repro.figures.style import use_style
    from tpu_matmul_repro.studies.then_and_now.figure import plot_then_and_now

    df = table.copy()
    df.loc[df.source == "estimate", "toolchain"] = "current"
    post = df[(df.source == "estimate") & (df.kernel != "xla")]
    post = post.assign(toolchain="post", libtpu_version="0.0.5")
    post.loc[post.kernel == "v1", "status"] = "ok"
    use_style(lang)
    fig = plot_then_and_now(pd.concat([df, post], ignore_index=True), lang, primary="current", narrow=True)
    try:
        assert fig.get_figwidth() == NARROW_INCHES
        assert layout.problems(fig) == []
        assert layout.smallest_font_px(fig, 390) >= 9.0  # tests/test_figure_layout.py: READABLE_PX
        assert "then_and_now" in NARROW_KINDS
    finally:
        plt.close(fig)


def test_a_wrapped_chinese_note_breaks_as_chinese_text_does():
    """No line of a wrapped note ends with an opening bracket or starts with closing punctuation (a
    phone's roofline note read "（" at a line's end, "已标记" below)."""
    from tpu_matmul_repro.figures.plots import CLOSING, OPENING, wrap

    note = "XLA 在 8192 处未画出：它的估计随尺寸增大反而下降（已标记，是代价模型的假象）。一二（三四）五"
    for width in range(6, 40):
        lines = wrap(note, width, indent="").splitlines()
        assert not any(line[-1] in OPENING for line in lines if line), (width, lines)
        assert not any(line[0] in CLOSING for line in lines[1:] if line), (width, lines)
