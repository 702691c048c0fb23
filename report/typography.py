"""Typography of the report's text: Chinese punctuation (punctuation_problems, the rule translations
are held to), a space between Chinese and a Latin word or a number, and numbers kept on one line
with their units (keep_units)."""
import html as entities
import re

CJK = "\u3400-\u4dbf\u4e00-\u9fff"
FULL_WIDTH = "。，；：！？、（）《》“”「」"
_CJK_OR_FULL = f"[{CJK}{FULL_WIDTH}]"

# (pattern, what to write instead) over a Chinese text; each match is one problem
RULES = (
    (re.compile(f"[{FULL_WIDTH.replace('（', '').replace('“', '').replace('《', '').replace('「', '')}] "),
     "no space after full-width punctuation"),
    (re.compile(r"(?:\d|%\(\w+\)[.\d]*[sdf]) %"), "no space between a number and %: 80%"),
    (re.compile(f"{_CJK_OR_FULL} ?[,;:!?]|[,;:!?] ?[{CJK}]"), "full-width ，；：！？ in Chinese text"),
    (re.compile(f"[{CJK}][()]|[()][{CJK}]"), "full-width （） around Chinese text"),
    (re.compile(r"; "), "a Chinese list or clause is joined with ；"),
    # commas inside ASCII parentheses are left out first: a tuple such as (bm, bk, bn) is code
    (re.compile(r"(?<![\d\s])[ ]?, (?![\d(])(?=\S)"), "a list of names is joined with 、 or ，"),
)
_PARENTHESES = re.compile(r"\([^()（）]*\)")


def punctuation_problems(text: str) -> list[str]:
    """Each place a Chinese `text` uses Latin punctuation or spacing, with the rule it breaks (code in the
    text passes: the rules look at punctuation beside Chinese characters)."""
    if not re.search(f"[{CJK}]", text):
        return []
    out = []
    for pattern, rule in RULES:
        checked = _PARENTHESES.sub(lambda m: "(" + "_" * (len(m.group(0)) - 2) + ")", text) \
            if rule.startswith("a list") else text
        for m in pattern.finditer(checked):
            start, end = max(0, m.start() - 12), min(len(text), m.end() + 12)
            out.append(f"{rule}: …{text[start:end]}…")
    return out


# A number and the unit after it (80 %, 75.1 TFLOP/s, 16 MiB, 819 GB/s, 103 µs), kept on one line.
NUMBER = r"\d+(?:[.,]\d+)*"
UNIT = re.compile(rf"(?<![\w.]){NUMBER}(?:\s?[–-]\s?{NUMBER})?\s?(?:%|TFLOP/s|TOP/s|MiB|GiB|GB/s|µs)"
                  r"(?![\w/])")
# A tuple of numbers, a block or a shape ("(512, 1024, 1024)"), kept on one line too
TUPLE = re.compile(rf"\({NUMBER}(?:, {NUMBER}){{1,3}}\)")
KEPT = re.compile(f"{TUPLE.pattern}|{UNIT.pattern}")
_SKIP = re.compile(r"<(pre|code|style|script|title|textarea)\b.*?</\1>", re.S | re.I)
_TAG = re.compile(r"(<[^>]*>)")


def _in_text(html: str, change) -> str:
    """`html` with `change` applied to its text: not tags, nor code, pre, style, script or title."""
    def text_of(part: str) -> str:
        return "".join(piece if piece.startswith("<") else change(piece) for piece in _TAG.split(part))

    out, last = [], 0
    for skip in _SKIP.finditer(html):
        out += [text_of(html[last:skip.start()]), skip.group(0)]
        last = skip.end()
    out.append(text_of(html[last:]))
    return "".join(out)


def message_problems(message: str) -> list[str]:
    """punctuation_problems of a catalog's translation: its placeholders read as the numbers or names
    they stand for ("0"), %% as %."""
    return punctuation_problems(re.sub(r"%\(\w+\)[.\d]*[sdf]", "0", message).replace("%%", "%"))


def keep_units(html: str) -> str:
    """`html` with every number-and-unit of its text (not inside tags, code, pre, style or title)
    wrapped in <span class="nb"> (white-space: nowrap, style.css)."""
    return _in_text(html, lambda text: KEPT.sub(lambda m: f'<span class="nb">{m.group(0)}</span>', text))


def visible_text(html: str, *, skip_code: bool = True) -> str:
    """The text a reader sees in `html`: no tags, code, pre, style or script; blocks on lines of their own."""
    body = html[html.index("<body"):] if "<body" in html else html
    if skip_code:
        body = _SKIP.sub(" ", body)
    body = re.sub(r"<(br|p|li|tr|h[1-6]|caption|figcaption|div|section|table|td|th|span class=\"cite\")\b",
                  "\n\\g<0>", body)
    text = entities.unescape(re.sub(r"<[^>]+>", "", body))
    return re.sub(r"\n\s*\n+", "\n", text)


# Chinese glued to a Latin word or a number ("按2026 年", "MiB失败"): Chinese text sets a space between
GLUED = re.compile(f"(?<=[{CJK}])(?=[0-9A-Za-z])|(?<=[0-9A-Za-z])(?=[{CJK}])")


def space_cjk(html: str) -> str:
    """`html` with a space wherever its text (not tags, code, pre, style or title) glues Chinese to a
    Latin word or a number."""
    return _in_text(html, lambda text: GLUED.sub(" ", text))


def glued(text: str) -> list[str]:
    """Each place a text glues Chinese to a Latin word or a number, with its neighbours."""
    return [text[max(0, m.start() - 8):m.start() + 8] for m in GLUED.finditer(text)]


def without_unit_spans(html: str) -> str:
    """`html` with keep_units' spans taken out again (its text unchanged): for reading the page's text."""
    return re.sub(r'<span class="nb">([^<]*)</span>', r"\1", html)
