"""The printed report read back with poppler-utils: figures at most MAX_PPI, no word in the margin,
every HTML table's columns in the PDF, page 1 the abstract and findings, the body at most
MAX_BODY_PAGES pages. `python3 -m tpu_matmul_repro.report.print_check REPORT.html REPORT.pdf`"""
import html as entities
import re
import shutil
import subprocess
import sys
from pathlib import Path

MAX_PPI = 350  # a figure drawn at 200 dpi with 8 pt text prints that text at >= 4.6 pt above this
MIN_WIDTH_MM = 120
RIGHT_MARGIN_MM = 13  # style.css: @page margin
SLACK_PT = 1.0  # a glyph's side bearing past the text box


def image_placements(pdf) -> list[dict]:
    """Each image of the PDF (not its soft masks): page, pixel width and the ppi it is placed at."""
    out = subprocess.run(["pdfimages", "-list", str(pdf)], capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines()[2:]:
        f = line.split()
        if len(f) > 13 and f[2] == "image":
            rows.append(dict(page=int(f[0]), width_px=int(f[3]), ppi=float(f[12]),
                             width_mm=int(f[3]) / float(f[12]) * 25.4))
    return rows


def words(pdf) -> list[dict]:
    """Every word of the PDF with its page, box (pt) and the page's width (pdftotext -bbox)."""
    out = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True,
                         check=True).stdout
    found, page, width = [], 0, 0.0
    for line in out.splitlines():
        if m := re.search(r'<page width="([\d.]+)"', line):
            page, width = page + 1, float(m[1])
        elif m := re.search(r'<word xMin="([\d.-]+)" yMin="[\d.-]+" xMax="([\d.-]+)"[^>]*>(.*)</word>', line):
            found.append(dict(page=page, x0=float(m[1]), x1=float(m[2]), text=entities.unescape(m[3]),
                              page_width=width))
    return found


def words_outside(pdf, margin_mm: float = RIGHT_MARGIN_MM) -> list[dict]:
    """Words that reach into the right margin or past either edge of their page."""
    margin = margin_mm / 25.4 * 72
    return [w for w in words(pdf) if w["x0"] < 0 or w["x1"] > w["page_width"] - margin + SLACK_PT]


def _squash(text: str) -> str:
    return re.sub(r"[\s\u00ad\u2010-]+", "", entities.unescape(text))


def table_headers(html: str) -> list[list[str]]:
    """The column headers of each table of the page (its <thead>), as text."""
    tables = []
    for head in re.findall(r"<thead>(.*?)</thead>", html, flags=re.S):
        cells = re.findall(r"<th\b[^>]*>(.*?)</th>", head, flags=re.S)
        tables.append([entities.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells])
    return tables


def _found_nearby(text: str, header: str, window: int = 400) -> bool:
    """`header`'s words (or characters) in `text`, in order, each within `window` characters of the one
    before (a wrapped header reads interleaved with its neighbours')."""
    # a Latin word, or one CJK character (a Chinese header wraps between any two)
    parts = [_squash(w) for w in re.findall(r"[\u2e80-\uffff]|[^\s\u2e80-\uffff(]+", header)]
    parts = [p for p in parts if p]
    if not parts:
        return True
    start = text.find(parts[0])
    while start >= 0:
        at, ok = start + len(parts[0]), True
        for part in parts[1:]:
            nxt = text.find(part, at)
            if nxt < 0 or nxt - at > window:
                ok = False
                break
            at = nxt + len(part)
        if ok:
            return True
        start = text.find(parts[0], start + 1)
    return False


def missing_columns(html: str, pdf) -> list[str]:
    """Column headers of the page's tables that the PDF's text lacks (a column cut off the page)."""
    text = _squash(" ".join(w["text"] for w in words(pdf)))
    return [h for table in table_headers(html) for h in table if not _found_nearby(text, h)]


ABSTRACT_WORDS = 120
FIRST_PAGE = {"en": ("Abstract", "The post's claim", "This run [80 % band]", "Verdict", "Test"),
              "zh": ("摘要", "原文的论断", "本次结果 [80% 区间]", "判定", "检验方式")}


def abstract_words(html: str) -> int:
    """Words of the abstract's paragraph (English)."""
    part = html[html.index('id="abstract"'):]
    paragraph = re.search(r"<p>(.*?)</p>", part, flags=re.S)[1]
    return len(entities.unescape(re.sub(r"<[^>]+>", "", paragraph)).split())


def first_page_problems(html: str, pdf, lang: str) -> list[str]:
    """Page 1 holds the abstract (at most ABSTRACT_WORDS words in English) and the findings table's
    headers; page 2 opens with the contents."""
    def page(n):
        return subprocess.run(["pdftotext", "-f", str(n), "-l", str(n), str(pdf), "-"], capture_output=True,
                              text=True, check=True).stdout

    first, found = _squash(page(1)), []
    found += [f"page 1 lacks {text!r}" for text in FIRST_PAGE[lang] if _squash(text) not in first]
    if lang == "en" and abstract_words(html) > ABSTRACT_WORDS:
        found.append(f"the abstract has {abstract_words(html)} words, more than {ABSTRACT_WORDS}")
    second = page(2).split()
    if not second or second[0] != {"en": "Contents", "zh": "目录"}[lang]:
        found.append(f"page 2 opens with {' '.join(second[:3])!r}, not the contents")
    return found


MAX_BODY_PAGES = 12
APPENDIX_HEADING = {"en": "Appendix", "zh": "附录"}


def page_texts(pdf) -> list[str]:
    """Each page's text, its lines laid out as printed (pdftotext -layout)."""
    out = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                         check=True).stdout
    return out.split("\f")[:-1] if out.endswith("\f") else out.split("\f")


def body_pages(pdf, lang: str) -> int | None:
    """The pages before the appendix, page 1 and the contents included: the page whose line is the
    appendix's heading counts when body text stands above the heading on it. None: no appendix."""
    heading = APPENDIX_HEADING[lang]
    for number, page in enumerate(page_texts(pdf), start=1):
        lines = [line.strip() for line in page.splitlines() if line.strip()]
        if number > 2 and heading in lines:
            return number if lines.index(heading) > 0 else number - 1
    return None


def body_problems(pdf, lang: str) -> list[str]:
    """The body longer than MAX_BODY_PAGES pages, or no appendix heading found."""
    pages = body_pages(pdf, lang)
    if pages is None:
        return [f"no page holds the appendix's heading {APPENDIX_HEADING[lang]!r}"]
    return [f"the body (before the appendix) is {pages} pages, more than {MAX_BODY_PAGES}"] \
        if pages > MAX_BODY_PAGES else []


def problems(html: str, pdf) -> list[str]:
    """Everything the printed report gets wrong by these checks, one line each."""
    found = []
    for image in image_placements(pdf):
        if image["ppi"] > MAX_PPI:
            found.append(f"page {image['page']}: a figure placed at {image['ppi']:.0f} ppi "
                         f"(at most {MAX_PPI})")
        if image["width_mm"] < MIN_WIDTH_MM - 0.5 and image["width_px"] >= MIN_WIDTH_MM / 25.4 * 200:
            found.append(f"page {image['page']}: a figure {image['width_mm']:.0f} mm wide "
                         f"(at least {MIN_WIDTH_MM})")
    for w in words_outside(pdf):
        found.append(f"page {w['page']}: {w['text']!r} reaches x = {w['x1']:.0f} pt of a "
                     f"{w['page_width']:.0f} pt page, into the right margin")
    found += [f"a table's column {h!r} is not in the PDF" for h in missing_columns(html, pdf)]
    return found


def main(argv) -> int:
    if len(argv) != 2:
        print("usage: python3 -m tpu_matmul_repro.report.print_check REPORT.html REPORT.pdf", file=sys.stderr)
        return 2
    html, pdf = (Path(a) for a in argv)
    for tool in ("pdfimages", "pdftotext"):
        if shutil.which(tool) is None:
            print(f"{tool}: not installed (Debian's poppler-utils)", file=sys.stderr)
            return 2
    for path in (html, pdf):
        if not path.is_file():
            print(f"{path}: no such file", file=sys.stderr)
            return 2
    text = html.read_text()
    lang = "zh" if 'lang="zh' in text[:300] else "en"
    found = problems(text, pdf) + first_page_problems(text, pdf, lang) + body_problems(pdf, lang)
    for line in found:
        print(f"{pdf}: {line}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
