"""The Chinese figures and PDF use the bundled Noto Sans CJK SC whatever CJK fonts the machine has
(issue 29: with Debian's fonts-noto-cjk, report.zh.pdf embedded Noto Sans CJK JP's glyph forms).

These tests need a system CJK font beside the bundled one (`apt-get install fonts-noto-cjk`); without
one they skip, saying so."""
import shutil
import subprocess

import pytest

from tpu_matmul_repro.figures.style import cjk_font_path

# Characters whose Japanese and Simplified Chinese glyph forms differ (直, 骨, 边) and plain Chinese.
TEXT = "简介：直 骨 边"


def system_cjk_fonts() -> list[tuple[str, str]]:
    """(file, family) of the installed CJK fonts that Fontconfig knows, other than the bundled one."""
    if not shutil.which("fc-list"):
        return []
    out = subprocess.run(["fc-list", ":lang=zh-cn", "file", "family"], capture_output=True, text=True).stdout
    bundled = str(cjk_font_path().parent)
    found = []
    for line in out.splitlines():
        path, _, families = line.partition(": ")
        if path and not path.startswith(bundled):
            found += [(path, family) for family in families.split(",")]
    return found


@pytest.fixture(scope="module")
def system_cjk():
    fonts = system_cjk_fonts()
    if not fonts:
        pytest.skip("no system CJK font installed (e.g. apt-get install fonts-noto-cjk): nothing the "
                    "bundled font could be mistaken for")
    return fonts


@pytest.mark.slow  # renders a PDF
def test_the_pdf_embeds_the_bundled_font_beside_a_system_cjk_font(system_cjk, tmp_path):
    from tpu_matmul_repro.report import build

    if not shutil.which("pdffonts"):
        pytest.skip("poppler-utils (pdffonts) not installed; .ci/run installs it")
    # the page's own font list, as report/templates/style.css gives it, and a code span
    html = ('<html><head><style>html { font-family: "Report CJK", "DejaVu Sans", sans-serif; }</style>'
            f'</head><body><h1>{TEXT}</h1><p>{TEXT} <code>{TEXT}</code></p></body></html>')
    pdf = tmp_path / "page.pdf"
    build.write_pdf(html, base_url=str(tmp_path) + "/", pdf_path=pdf, font_path=cjk_font_path())
    fonts = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True, check=True).stdout
    cjk = [line.split()[0] for line in fonts.splitlines() if "CJK" in line]
    # WeasyPrint names an embedded font after the @font-face family it came from: the bundled file's
    bundled = build.PDF_CJK_FAMILY.replace(" ", "-")
    assert cjk and all(name.split("+")[-1].startswith(bundled) for name in cjk), fonts


@pytest.mark.slow  # copies a system font's face to a file of its own
def test_the_figures_find_the_bundled_font_beside_a_system_copy_of_it(system_cjk, tmp_path):
    """A distribution may ship Noto Sans CJK SC itself (another version, another file): the figures'
    font list must still name the bundled copy, which the figures' check of glyphs is made against."""
    from fontTools.ttLib import TTCollection, TTFont
    from matplotlib import font_manager

    from tpu_matmul_repro.figures.style import CJK_FAMILY, cjk_figure_font, use_style

    path, _ = next(((p, f) for p, f in system_cjk if f == "Noto Sans CJK SC"), system_cjk[0])
    if path.endswith(".ttc"):  # the face of that family, as a file of its own (as Fedora ships it)
        faces = TTCollection(path, lazy=True).fonts
        face = next(f for f in faces if "Noto Sans CJK SC" in str(f["name"].getDebugName(1))) if any(
            "Noto Sans CJK SC" in str(f["name"].getDebugName(1)) for f in faces) else faces[0]
        copy = tmp_path / "system-copy.otf"
        face.save(str(copy))
    else:
        copy = path
    family = TTFont(str(copy), lazy=True)["name"].getDebugName(1)
    manager = font_manager.fontManager
    manager.addfont(str(copy))
    try:
        use_style("zh")
        first = manager.findfont(font_manager.FontProperties(family=["sans-serif"]))
        assert first == str(cjk_figure_font()), (family, first)
        assert CJK_FAMILY != family
    finally:
        manager.ttflist = [f for f in manager.ttflist if f.fname != str(copy)]
        manager._findfont_cached.cache_clear()
