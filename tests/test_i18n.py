"""The one translation system (experiments/core/i18n.py): the catalog holds exactly the messages the
figures, report and studies mark, each translated with the same placeholders, in the glossary's terms."""
import re

import pytest
from babel.messages import pofile

from experiments.core import i18n
from figures.catalog import CATALOG
from figures.labels import LABELS, SOURCE_NAMES, text
from studies.history.figure import TEXT as HISTORY_TEXT


def key(message) -> tuple[str, str | None]:
    """(msgid, context) of a message as N_() or NC_() stored it."""
    return (message[1], message[0]) if isinstance(message, tuple) else (message, None)


def test_catalog_is_complete():
    assert i18n.translations("zh").gettext("Abstract") == "摘要"
    assert i18n.translate("zh", "Matrix size (M = K = N)") == "矩阵大小（M = K = N）"


@pytest.mark.parametrize("msgid, msgstr", [("Abstract", "摘要"),  # a report's, a figure's
                                           ("Matrix size (M = K = N)", "矩阵大小（M = K = N）")])
def test_missing_translation_fails_the_build(tmp_path, monkeypatch, msgid, msgstr):
    catalog = tmp_path / "zh" / "LC_MESSAGES" / "messages.po"
    catalog.parent.mkdir(parents=True)
    po = i18n.catalog_path("zh").read_text()
    assert f'msgid "{msgid}"\nmsgstr "{msgstr}"' in po
    catalog.write_text(po.replace(f'msgid "{msgid}"\nmsgstr "{msgstr}"', f'msgid "{msgid}"\nmsgstr ""'))
    monkeypatch.setattr(i18n, "LOCALE", tmp_path)
    with pytest.raises(i18n.CatalogError, match=re.escape(msgid)):
        i18n.translations("zh")


def test_the_catalog_holds_exactly_the_marked_messages():
    """No unused message (tools/po_update.py drops them), none missing, the context kept."""
    held = {(m.id, m.context) for m in i18n.read_catalog("zh") if m.id}
    assert held == i18n.used_messages()
    assert ("default scoped limit %(limit).0f MiB", "vmem figure") in held  # one English, two translations
    assert ("default scoped limit %(limit).0f MiB", None) in held


def test_extraction_covers_every_figure_string_and_the_studies():
    used = i18n.used_messages()
    stored = [*LABELS.values(), *SOURCE_NAMES.values(), *(e.caption for e in CATALOG.values()),
              *(e.alt for e in CATALOG.values())]
    assert {key(m) for m in stored} <= used
    figures_and_studies = i18n.used_messages(under=("figures/", "studies/"))
    assert ("Matrix size (M = K = N)", None) in figures_and_studies
    assert ("Abstract", None) in used and ("Abstract", None) not in figures_and_studies
    # a study's figure: found by the studies/ glob
    assert {key(m) for m in HISTORY_TEXT.values()} <= i18n.used_messages(under=("studies/",))


def test_every_translation_keeps_the_placeholders():
    """%(name)s in the English, %(name)s in the translation (babel's python-format check), and a
    literal % written %%, in the figures' messages as in the report's."""
    catalog = i18n.read_catalog("zh")
    problems = [(m.id, [str(e) for e in errors]) for m, errors in catalog.check()]
    assert not problems, problems[:3]
    python_format = [m for m in catalog if m.id and m.python_format]
    assert len(python_format) > 100 and all("python-format" in m.flags for m in python_format)


def test_figure_text_is_filled_after_translation():
    assert text("zh", "out_of_sample", pct=12.4, n=5) == "不参与拟合时误差中位数为 12 %（5 个点）"
    assert text("en", "blocks", bm=512, bk=1024, bn=256) == "blocks (512, 1024, 256)"
    assert text("en", "interval_band").startswith("shaded: the timing model's 80 % prediction interval")
    assert text("zh", "limit_default", limit=16) == "默认 scoped VMEM 上限 16 MiB"


def test_chinese_uses_the_glossary():
    """Every Chinese string of the figures, the report and the studies uses the fixed terms, not their
    variants."""
    terms, avoid = i18n.glossary("zh")
    with open(i18n.catalog_path("zh"), "rb") as f:
        strings = [m.string for m in pofile.read_po(f) if m.id]
    for text_zh in strings:
        for variant, term in avoid.items():
            assert not re.search(variant, text_zh), f"{text_zh!r}: use {term!r}, not {variant!r}"
    assert any("归约" in s for s in strings) and any("流水线" in s for s in strings)
    assert ("kernel", "算子") in terms and i18n.translate("zh", LABELS["description_other"]) == "Pallas 算子"
