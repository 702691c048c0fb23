"""The figure gallery (results/figures/index.html, index.zh.html), a card per figure with its title,
caption, files and copy-ready snippets keeping the attribution, and results/' licence, citation and
attribution files: what a blogger needs to reuse a figure, offline."""
import html
from pathlib import Path

import pandas as pd
from PIL import Image

from tpu_matmul_repro.experiments.core.i18n import N_, translate
from tpu_matmul_repro.figures import advice_figure
from tpu_matmul_repro.figures.catalog import describe
from tpu_matmul_repro.figures.cite import (
    CITATION_FILE,
    RESULTS_LICENCE,
    RESULTS_LICENCE_URL,
    bibtex,
    citation,
    credit,
    post_attribution,
)
from tpu_matmul_repro.figures.figure_specs import (
    FORMATS,
    LANGUAGES,
    NARROW_KINDS,
    advice_specs,
    figure_specs_of,
    stem,
)
from tpu_matmul_repro.figures.labels import join, source_names

TEXT = {  # English, marked for extraction; the translations are in locale/ (experiments/core/i18n.py)
    "title": N_("Figures of tpu-matmul-repro"), "files": N_("Files"), "cite": N_("Cite this figure"),
    "alt": N_("Alt text"), "copy": N_("Copy"), "figure": N_("Figure"), "colon": N_(": "),
    "intro": N_("Every figure of this run, with its caption, its files and snippets to paste into a post. "
                "The snippets keep the attribution and say whether the numbers are estimated (libtpu's "
                "raw number), modelled (the timing model), measured or published; the figures and data "
                "are %(licence)s."),
    "shows": N_("Numbers shown: %(kinds)s."),
}
# the link to the other language's page, in that language's own words
OTHER = {"en": {"other": "简体中文", "other_language": "中文版"},
         "zh": {"other": "English", "other_language": "English"}}
NAMES = {"markdown": "Markdown", "html": "HTML", "bibtex": "BibTeX"}
STYLE = """
body { font-family: "Report CJK", -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #1a1a1a;
       max-width: 60rem; margin: 0 auto; padding: 1rem; line-height: 1.5; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 0.8rem 1rem; margin: 1.4rem 0; }
.card img { max-width: 100%; height: auto; display: block; margin: 0.5rem auto; }
.card h2 { font-size: 1.1rem; margin: 0.2rem 0 0.4rem; }
.kind { display: inline-block; background: #fff6e5; border: 1px solid #E69F00; border-radius: 4px;
        padding: 0 0.4rem; font-size: 0.85rem; }
.meta, .files { color: #555; font-size: 0.9rem; }
textarea { width: 100%; box-sizing: border-box; font: 0.8rem/1.35 "Report CJK", monospace;
           min-height: 5.5rem; }
button, textarea { font-family: "Report CJK", monospace; }
label { font-weight: 600; font-size: 0.9rem; display: block; margin-top: 0.5rem; }
button { font-size: 0.8rem; margin-left: 0.5rem; }
"""
SCRIPT = """document.querySelectorAll('button[data-copy]').forEach(b => b.addEventListener('click', () => {
  const t = document.getElementById(b.dataset.copy); t.select();
  (navigator.clipboard ? navigator.clipboard.writeText(t.value) : Promise.reject())
    .catch(() => document.execCommand('copy'));
}));"""


def figure_title(png: Path) -> str:
    """The title embedded in the figure's PNG (figures/style.py), or its file name."""
    with Image.open(png) as image:
        return image.text.get("Title") or png.stem


def kinds_label(kinds, lang: str) -> str:
    """The four classes (catalog.kinds_of: estimate, modelled, measured, published) a figure shows."""
    names = source_names(lang)
    order = ("estimate", "modelled", "measured", "published")
    return join(lang, "list", (names[s] for s in order if s in kinds))


def commit_of(df: pd.DataFrame) -> str:
    shas = sorted({str(v) for v in df.git_sha.dropna() if str(v)}) if "git_sha" in df else []
    return ", ".join(shas) or "unknown"


def snippets(name: str, lang: str, title: str, info: dict, commit: str, src: str | None = None) -> dict:
    """Markdown and HTML to paste, with the attribution and the kind of numbers."""
    src = src or f"{stem('', name, lang).name}.png"
    kinds = translate(lang, TEXT["shows"], kinds=kinds_label(info["kinds"], lang))
    attribution = credit(lang, commit)
    lines = [kinds, attribution]
    if "published" in info["sources"]:
        lines.append(post_attribution(lang))
    note = " ".join(lines)
    markdown = f"![{info['alt']}]({src})\n\n*{title}.* {info['caption']} {note}"
    caption = html.escape(f"{title}. {info['caption']}")
    licence_link = f'<a href="{RESULTS_LICENCE_URL}">{RESULTS_LICENCE}</a>'
    note_html = html.escape(note).replace(RESULTS_LICENCE, licence_link, 1)
    html_snippet = (f'<figure>\n  <img src="{src}" alt="{html.escape(info["alt"], quote=True)}" '
                    f'style="max-width:100%">\n  <figcaption>{caption}<br><small>{note_html}</small>'
                    '</figcaption>\n</figure>')
    return {"markdown": markdown, "html": html_snippet}


def cite_text(name: str, title: str, commit: str, lang: str) -> str:
    c = citation()
    where = f" {c.repository}" if c.repository else ""
    label = translate(lang, TEXT["figure"])
    return (f"{c.authors} ({c.year}). {label} “{title}” ({name}). {c.title}, v{c.version}, "
            f"commit {commit}.{where}")


ADVICE_FOLDER = "../advice"  # results/advice/, from results/figures/


def card_source(name: str, kind: str, args: dict, lang: str) -> tuple[str, str]:
    """(folder from the gallery, file stem) of a figure's files: the advice figures' in results/advice/."""
    if kind == "advice":
        return ADVICE_FOLDER, stem("", args["shape"], lang).name
    return "", stem("", name, lang).name


def page(df: pd.DataFrame, figures: dict, lang: str, directory, primary: str | None = None,
         served: dict | None = None, advice: dict | None = None, model=None) -> str:
    """One gallery page: a card per figure, numbered as the report numbers them, each described from the
    rows it is drawn from and the run's fits; `advice`: {shape: the advisor's table}."""
    from tpu_matmul_repro.report.build import report_order

    t = {key: translate(lang, message) for key, message in TEXT.items() if key not in ("intro", "shows")}
    t |= OTHER[lang] | NAMES
    commit = commit_of(df)
    other = "index.html" if lang == "zh" else "index.zh.html"
    advice = advice or {}
    figures = figure_specs_of(figures) | advice_specs(advice)
    cards = []
    for number, name in enumerate(report_order(figures), start=1):
        kind, args = figures[name]
        folder, base = card_source(name, kind, args, lang)
        href = f"{folder}/{base}" if folder else base
        if kind == "advice":
            info = advice_figure.describe(advice[args["shape"]], args["shape"], lang)
        else:
            info = describe(df, name, kind, args, lang, primary=primary, served=served, model=model)
        title = figure_title(Path(directory) / f"{href}.png")
        snip = snippets(name, lang, title, info, commit, src=f"{base}.png")  # the file, saved beside a post
        files = " · ".join(f'<a href="{href}.{fmt}">{base}.{fmt}</a>' for fmt in FORMATS)
        _, other_base = card_source(name, kind, args, "en" if lang == "zh" else "zh")
        files += f' · <a href="{folder + "/" if folder else ""}{other_base}.png">{t["other_language"]}</a>'
        cite = cite_text(name, title, commit, lang)
        bib = bibtex(f"tpu_matmul_repro_{name}", f"{title} ({name})", commit)
        ids = {k: f"{k}-{number}" for k in ("md", "html", "cite", "bib")}
        shows = translate(lang, TEXT["shows"], kinds=kinds_label(info["kinds"], lang))
        image = f'<img src="{href}.png" alt="{html.escape(info["alt"], quote=True)}" loading="lazy">'
        if kind in NARROW_KINDS:  # on a phone, the variant drawn for it
            narrow = f'<source media="(max-width: 600px)" srcset="{href}.narrow.png">'
            image = f"<picture>{narrow}{image}</picture>"
        cards.append(f"""<section class="card" id="{name}">
<h2>{t["figure"]} {number}. {html.escape(title)}</h2>
<p><span class="kind">{html.escape(shows)}</span></p>
<a href="{href}.png">{image}</a>
<p>{html.escape(info["caption"])}</p>
<p class="meta">{t["alt"]}{t["colon"]}{html.escape(info["alt"])}</p>
<p class="files">{t["files"]}{t["colon"]}{files}</p>
<label for="{ids["md"]}">{t["markdown"]}<button data-copy="{ids["md"]}">{t["copy"]}</button></label>
<textarea id="{ids["md"]}" readonly>{html.escape(snip["markdown"])}</textarea>
<label for="{ids["html"]}">{t["html"]}<button data-copy="{ids["html"]}">{t["copy"]}</button></label>
<textarea id="{ids["html"]}" readonly>{html.escape(snip["html"])}</textarea>
<label for="{ids["cite"]}">{t["cite"]}<button data-copy="{ids["cite"]}">{t["copy"]}</button></label>
<textarea id="{ids["cite"]}" readonly>{html.escape(cite)}</textarea>
<label for="{ids["bib"]}">{t["bibtex"]}<button data-copy="{ids["bib"]}">{t["copy"]}</button></label>
<textarea id="{ids["bib"]}" readonly rows="8">{html.escape(bib)}</textarea>
</section>""")
    lang_tag = "zh-Hans" if lang == "zh" else "en"
    intro = translate(lang, TEXT["intro"], licence=f'<a href="{RESULTS_LICENCE_URL}">{RESULTS_LICENCE}</a>')
    credit_line = html.escape(post_attribution(lang))
    return f"""<!DOCTYPE html>
<html lang="{lang_tag}">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{t["title"]}</title><style>{STYLE}</style></head>
<body>
<p style="float:right"><a href="{other}">{t["other"]}</a></p>
<h1>{t["title"]}</h1>
<p>{intro}</p>
<p class="meta">{credit_line} <a href="../LICENSE.md">LICENSE.md</a> ·
<a href="../CITATION.cff">CITATION.cff</a> · <a href="../ATTRIBUTION.md">ATTRIBUTION.md</a></p>
{chr(10).join(cards)}
<script>{SCRIPT}</script>
</body>
</html>
"""


def pages(df: pd.DataFrame, figures: dict, directory, primary: str | None = None,
          served: dict | None = None, advice: dict | None = None, model=None) -> dict[str, str]:
    """{file name: HTML} for every language's gallery page of the figures in `directory`."""
    from tpu_matmul_repro.figures.style import cjk_font_path
    from tpu_matmul_repro.report.build import embed_cjk_font

    return {("index.html" if lang == "en" else f"index.{lang}.html"):
            embed_cjk_font(page(df, figures, lang, directory, primary, served, advice, model),
                           cjk_font_path())
            for lang in LANGUAGES}


def results_files(df: pd.DataFrame) -> dict[str, str]:
    """results/LICENSE.md, ATTRIBUTION.md and CITATION.cff: the terms and credits that travel with them."""
    c = citation()
    commit = commit_of(df)
    licence = f"""# Licence of these results

The figures (`figures/`), tables (`*.parquet`, `*.csv`) and report (`report/`) in this folder were made by
{c.title} v{c.version} (commit {commit}) and are licensed under the Creative Commons Attribution 4.0
International licence ({RESULTS_LICENCE}, {RESULTS_LICENCE_URL}). Reuse them freely, with credit, e.g.:

> {credit("en", commit)}

The code that made them is {c.code_licence}-licensed (the repository's `LICENSE`). The published numbers
among them are the post's: see `ATTRIBUTION.md`. How to cite: `CITATION.cff`.

# 许可

本目录中的图表（`figures/`）、数据表（`*.parquet`、`*.csv`）和报告（`report/`）由 {c.title} v{c.version}
（提交 {commit}）生成，采用知识共享署名 4.0 国际许可（{RESULTS_LICENCE}）。可自由复用，但须署名，例如：

> {credit("zh", commit)}

其中的原文数据归原文作者所有，见 `ATTRIBUTION.md`。
"""
    attribution = f"""# Attribution of the published numbers

Rows with `source = "published"` in `matmul.parquet`, and the hollow markers in the figures, are the
numbers of the post this project reproduces:

- {c.post_author}, “{c.post_title}”, {c.post_date}.
- The post's code, figures and TPU set-up: {c.post_url} ({c.post_licence} licence). Its set-up script
  (`create_tpu_then_ssh.sh`) creates a `v5litepod-1` VM: a single TPU v5e chip. The post itself does not
  name its chip; this is where "TPU v5e" comes from.
- They were read off the post's five figures by pixel position (about ±2 % of each axis), so values under
  ~5 TFLOP/s are rough; the post's images are not copied here.

{post_attribution("en")}

# 原文数据的署名

{post_attribution("zh")} 原文未写明所用芯片；其仓库的配置脚本（`create_tpu_then_ssh.sh`）创建的是
`v5litepod-1`（单颗 TPU v5e），“TPU v5e” 即由此而来。
"""
    return {"LICENSE.md": licence, "ATTRIBUTION.md": attribution,
            "CITATION.cff": CITATION_FILE.read_text(encoding="utf-8")}
