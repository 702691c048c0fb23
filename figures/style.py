"""Fonts, style and saving: the same look in both languages and the same bytes for the same table;
the Chinese figures use the `mpl-font` wheel's Noto Sans CJK SC under a family name of its own, so no
system font stands in for it (docs/reliability.md, "Fonts")."""
import functools
import importlib.util
from pathlib import Path

import matplotlib

from tpu_matmul_repro.experiments.core.atomic_write import write_atomic
from tpu_matmul_repro.experiments.core.cache_dirs import user_cache
from tpu_matmul_repro.experiments.core.i18n import read_catalog, scopes, used_messages
from tpu_matmul_repro.figures.figure_specs import FORMATS, LANGUAGES

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import font_manager  # noqa: E402

STYLE = Path(__file__).with_name("repro.mplstyle")
CJK_FAMILY = "tpu-matmul-repro Noto Sans CJK SC"  # the cut-down copy's family name (cjk_figure_font)
LATIN_FAMILY = "DejaVu Sans"  # ships with Matplotlib; also has the symbols (✗) Noto CJK lacks
# Fixed metadata: no creation dates or tool versions, so an unchanged table gives identical files.
METADATA = {
    "png": {"Software": None},
    "svg": {"Date": None, "Creator": None},
    "pdf": {"CreationDate": None, "ModDate": None, "Creator": None, "Producer": None},
}
# The provenance fields each file carries (figures/catalog.py:provenance), as "Label: value" lines.
FIELDS = (("title", "Title"), ("caption", "Caption"), ("sources", "Sources"), ("toolchain", "Toolchain"),
          ("commit", "Commit"), ("licence", "Licence"), ("post_url", "Post"),
          ("repository_url", "Repository"), ("alt", "Alt text"))


def provenance_lines(info: dict) -> str:
    return "\n".join(f"{label}: {info[key]}" for key, label in FIELDS if info.get(key))


def file_metadata(fmt: str, info: dict | None) -> dict:
    """Matplotlib's `metadata=` for one format (PNG text chunks, SVG Dublin Core, PDF info), every field."""
    meta = dict(METADATA[fmt])
    if not info:
        return meta
    if fmt == "png":
        # PNG's registered keywords where one fits, the project's own names for the rest
        names = {"caption": "Description", "sources": "Source", "licence": "Copyright", "alt": "AltText"}
        meta |= {names.get(key, label): info[key] for key, label in FIELDS if info.get(key)}
        meta["Author"] = info.get("author")
    elif fmt == "svg":
        meta |= {"Title": info["title"], "Description": provenance_lines(info), "Source": info["sources"],
                 "Rights": info["licence"], "Relation": info["post_url"], "Creator": info.get("author"),
                 "Language": info.get("language", ""),
                 "Identifier": info.get("repository_url") or f"commit {info['commit']}"}
    else:
        meta |= {"Title": info["title"], "Subject": info["caption"], "Author": info.get("author"),
                 "Keywords": provenance_lines({k: v for k, v in info.items()
                                               if k not in ("title", "caption")})}
    return meta


def cjk_font_path() -> Path:
    """The `mpl-font` wheel's Noto Sans CJK SC, found without importing mpl_font (which changes
    Matplotlib's global settings)."""
    spec = importlib.util.find_spec("mpl_font")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the CJK font comes from the PyPI package mpl-font (pinned in "
                                "requirements.txt); install it with `pip install -r requirements.txt -e .`")
    path = Path(spec.submodule_search_locations[0]) / "fonts" / "noto" / "NotoSansCJKsc-Regular.otf"
    if not path.is_file():
        raise FileNotFoundError(f"expected Noto Sans CJK SC at {path} (mpl-font 1.1.0)")
    return path


@functools.cache
def drawable_characters() -> str:
    """Every character a figure can draw: printable ASCII, every other character in the figures' and
    studies' code, and in the translations of their messages and the kernels' descriptions."""
    chars = {chr(c) for c in range(0x20, 0x7F)}
    root = Path(__file__).resolve().parent.parent
    for module in sorted([*root.glob("figures/*.py"), *root.glob("studies/*/*.py")]):
        chars |= {ch for ch in module.read_text(encoding="utf-8") if ord(ch) > 0x7E}
    drawn = used_messages(under=("figures/", "studies/", "kernels/"))
    for language in LANGUAGES[1:]:
        chars |= {ch for study in scopes() for m in read_catalog(language, study)
                  if (m.id, m.context) in drawn
                  for ch in ("".join(m.string) if isinstance(m.string, tuple) else m.string)  # plural: forms
                  if ord(ch) > 0x7E}
    return "".join(sorted(chars))


def cjk_figure_font() -> Path:
    """Noto Sans CJK SC cut down to drawable_characters once (cutting the 16 MB font for each PDF is
    slow), kept in the user's cache under a name from the font and the characters."""
    import hashlib
    import os

    from fontTools import subset

    source = cjk_font_path()
    text = drawable_characters()
    stat = source.stat()
    key = hashlib.sha256(f"{source.name} {stat.st_size} {subset.__name__} {CJK_FAMILY} {text}".encode()
                         ).hexdigest()[:16]
    path = user_cache("fonts") / f"{source.stem}-{key}{source.suffix}"
    if not path.is_file():
        options = subset.Options()
        options.name_IDs = ["*"]  # keep the family name: Matplotlib finds the font by it
        options.notdef_outline = True
        font = subset.load_font(str(source), options)
        cutter = subset.Subsetter(options)
        cutter.populate(text=text)
        cutter.subset(font)
        for record in font["name"].names:  # the family (and full) name Matplotlib finds it by
            if record.nameID in (1, 4, 16):
                record.string = CJK_FAMILY
        # not write_atomic: two jobs may cut it at once, and its clean-up would remove the other's file
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        subset.save_font(font, str(tmp), options)
        os.replace(tmp, path)
    return path


def use_style(lang: str) -> None:
    """Apply the shared style and the language's font list (CJK first for Chinese)."""
    if lang not in LANGUAGES:
        raise ValueError(f"lang={lang!r} unknown; expected one of {LANGUAGES}")
    plt.rcdefaults()
    plt.style.use(STYLE)
    if lang == "zh":
        path = cjk_figure_font()
        if not any(f.fname == str(path) for f in font_manager.fontManager.ttflist):
            font_manager.fontManager.addfont(str(path))
        families = [CJK_FAMILY, LATIN_FAMILY]
    else:
        families = [LATIN_FAMILY]
    plt.rcParams["font.family"] = "sans-serif"
    plt.rcParams["font.sans-serif"] = families


PAD_INCHES = 0.08  # around the tight bounding box
# While saving: with these off, set_layout_engine(None) leaves a figure without a layout engine (which
# savefig also restores on its way out), instead of making a new one from the style.
NO_LAYOUT = {"figure.autolayout": False, "figure.constrained_layout.use": False}


def lay_out(fig):
    """Lay the figure out once, as saving the PNG would, and fix that layout (call under
    rc_context(NO_LAYOUT)); returns the tight bounding box every format is cut to, so no savefig lays
    it out and draws it again."""
    shown = fig.dpi
    fig.dpi = plt.rcParams["savefig.dpi"]  # as savefig sets it: text measured at the PNG's resolution
    try:
        fig.draw_without_rendering()  # runs the layout engine (constrained, from repro.mplstyle)
        # "tight" keeps the notes written below the axes (sources, failures) inside the file
        bbox = fig.get_tightbbox(fig.canvas.get_renderer()).padded(PAD_INCHES)
    finally:
        fig.dpi = shown
    fig.set_layout_engine(None)  # savefig then neither lays out nor pre-draws
    return bbox


def save(fig, stem, info: dict | None = None, formats=FORMATS) -> list[Path]:
    """Write `stem`.png/.svg/.pdf (or `formats`) from one layout, each with `info` embedded; returns
    the paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    with plt.rc_context(NO_LAYOUT):
        bbox = lay_out(fig)
        for fmt in formats:
            path = stem.parent / f"{stem.name}.{fmt}"
            meta = file_metadata(fmt, info)
            write_atomic(path, lambda tmp, fmt=fmt, meta=meta: fig.savefig(tmp, format=fmt, metadata=meta,
                                                                            bbox_inches=bbox))
            paths.append(path)
    plt.close(fig)
    return paths
