"""The four classes of number (analysis/number_classes.py): the rule, and the report's sentences about its
numbers, in both languages, named from the rows they describe (a run with a timing-model fit prints
modelled speeds, one without prints libtpu's estimates)."""
import re

import pytest
from test_report import modelled_table, render

from tpu_matmul_repro.analysis.number_classes import number_class, speed_classes
from tpu_matmul_repro.report.typography import visible_text


def test_a_number_s_class_follows_its_source_and_the_model():
    assert number_class("estimate") == "estimate"
    assert number_class("estimate", through_model=True) == "modelled"
    assert number_class("measured", through_model=True) == "measured"  # the model never renames a measurement
    assert number_class("published") == "published"
    with pytest.raises(ValueError, match="source: 'model'"):
        number_class("model")


def test_the_classes_of_a_table_s_speeds(table):
    assert speed_classes(table) == ["estimate", "published"]
    assert speed_classes(modelled_table(table)) == ["modelled", "published"]
    assert speed_classes(table[table.source == "published"]) == ["published"]


# Each language's words for the classes, and the sentences of the report that name them.
WORDS = {"en": {"estimate": "estimated", "modelled": "modelled"},
         "zh": {"estimate": "估计值", "modelled": "建模值"}}
SENTENCES = {  # (where, the sentence with the class word cut out as (?P<word>...))
    "en": [("abstract", r"Nothing was measured on a TPU: every speed is (?P<word>\w+)\."),
           ("roofline", r"Every point is (?P<word>[\w ]+)\."),
           ("introduction", r"every TPU TFLOP/s number below is (?P<word>[\w, ]+?)\.")],
    "zh": [("abstract", r"本次没有在 TPU 上做任何实测，所有速度都是(?P<word>[^。]+)。"),
           ("roofline", r"图中的点都是(?P<word>[^。]+)。"),
           ("introduction", r"下文中 TPU 的 TFLOP/s 数字都是(?P<word>[^。]+)。")],
}


def fitted(table):
    """The fixture as a run with a fit has it: both of the timing model's columns beside libtpu's."""
    df = modelled_table(table)
    return df.assign(model_device_tflops=df.model_post_tflops * 1.1)


def section(html: str, anchor: str) -> str:
    match = re.search(rf'<section id="{anchor}".*?</section>', html, flags=re.S)
    assert match, anchor
    return visible_text(match.group(0))


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("modelled", [False, True])
def test_the_report_names_the_class_its_rows_hold(table, lang, modelled):
    """The abstract, the roofline and the introduction's note call the speeds modelled exactly where the
    table's estimate rows carry the timing model's numbers, else estimated; the other word never."""
    df = fitted(table) if modelled else table
    html = render(df, lang)
    cls, other = ("modelled", "estimate") if modelled else ("estimate", "modelled")
    for where, pattern in SENTENCES[lang]:
        match = re.search(pattern, section(html, where))
        assert match, (where, pattern)
        words = match.group("word")
        if where == "introduction":  # every TPU speed shown: libtpu's raw estimate stays beside the model
            assert (WORDS[lang]["modelled"] in words) is modelled, words
            assert WORDS[lang]["estimate"] in words, words
        elif where == "roofline":  # the post's published points stand beside the run's
            expected = {"en": f"{WORDS['en'][cls]} or published", "zh": f"{WORDS['zh'][cls]}或原文数据"}
            assert words == expected[lang], (where, words)
        else:
            assert words == WORDS[lang][cls], (where, words)
            assert WORDS[lang][other] not in words
    # the sentences of the drafts this replaced: speeds called estimates whatever the rows hold
    assert "Every speed here is an estimate" not in html and "本报告中的速度都是估计值" not in html
