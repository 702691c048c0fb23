"""The one translation system (experiments/core/i18n.py): the catalog holds exactly the messages the
figures, report and studies mark, each translated with the same placeholders, in the glossary's terms."""
import re
import shutil

import pytest

from tpu_matmul_repro.experiments.core import i18n
from tpu_matmul_repro.figures.catalog import CATALOG
from tpu_matmul_repro.figures.labels import LABELS, SOURCE_NAMES, text
from tpu_matmul_repro.studies.history.figure import TEXT as HISTORY_TEXT


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


@pytest.mark.parametrize("study", i18n.scopes())
def test_each_catalog_holds_exactly_the_messages_of_its_scope(study):
    """No unused message (tools/po_update.py drops them), none missing, the context kept: the core's
    catalog the core's marks, a study's (in its folder) those of its folder that the core lacks."""
    held = {(m.id, m.context) for m in i18n.read_catalog("zh", study) if m.id}
    assert held == i18n.scope_messages(study) and held


def test_the_catalogs_together_hold_every_marked_message_with_one_translation():
    """The core's and the studies' catalogs split the messages: none left out, a study's own text in its
    folder (two studies that mark one message both hold it, translated alike)."""
    held = {}
    for study in i18n.scopes():
        for m in i18n.read_catalog("zh", study):
            if m.id:
                assert held.setdefault((m.id, m.context), m.string) == m.string, m.id
    assert set(held) == i18n.used_messages()
    assert "then_and_now" in i18n.scopes() and "history" in i18n.scopes()
    assert ("Then and now: the post's compiler against today's", None) in i18n.scope_messages("then_and_now")
    assert i18n.translate("zh", "Then and now, every configuration") == "当年与今天：全部配置"


def test_a_study_without_its_catalog_fails_the_build(tmp_path, monkeypatch):
    studies = tmp_path / "studies"
    shutil.copytree(i18n.STUDIES, studies, ignore=shutil.ignore_patterns("locale", "__pycache__"))
    monkeypatch.setattr(i18n, "STUDIES", studies)
    i18n._marked.cache_clear()
    monkeypatch.setattr(i18n, "ROOT", tmp_path)  # the core's files: none here, so every mark is a study's
    try:
        with pytest.raises(i18n.CatalogError, match=r"studies/\w+/locale/zh/LC_MESSAGES/messages.po: no"):
            i18n.translations("zh")
    finally:
        i18n._marked.cache_clear()


def test_the_catalogs_keep_the_contexts():
    held = {(m.id, m.context) for study in i18n.scopes() for m in i18n.read_catalog("zh", study) if m.id}
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


@pytest.mark.parametrize("study", i18n.scopes())
def test_every_translation_keeps_the_placeholders(study):
    """%(name)s in the English, %(name)s in the translation (babel's python-format check), and a
    literal % written %%, in the figures' messages as in the report's."""
    catalog = i18n.read_catalog("zh", study)
    problems = [(m.id, [str(e) for e in errors]) for m, errors in catalog.check()]
    assert not problems, problems[:3]
    python_format = [m for m in catalog if m.id and m.python_format]
    assert python_format and all("python-format" in m.flags for m in python_format)


def test_figure_text_is_filled_after_translation():
    assert text("zh", "out_of_sample", pct=12.4, n=5) == "不参与拟合时误差中位数为 12 %（5 个点）"
    assert text("en", "blocks", blocks="(512, 1024, 256)") == "blocks (512, 1024, 256)"
    assert text("en", "interval_band").startswith("shaded: the timing model's 80 % prediction interval")
    assert text("zh", "limit_default", limit=16) == "默认 scoped VMEM 上限 16 MiB"


def test_chinese_uses_the_glossary():
    """Every Chinese string of the figures, the report and the studies uses the fixed terms, not their
    variants."""
    terms, avoid = i18n.glossary("zh")
    strings = [m.string for study in i18n.scopes() for m in i18n.read_catalog("zh", study) if m.id]
    for text_zh in strings:
        for variant, term in avoid.items():
            assert not re.search(variant, text_zh), f"{text_zh!r}: use {term!r}, not {variant!r}"
    assert any("归约" in s for s in strings) and any("流水线" in s for s in strings)
    assert ("kernel", "算子") in terms and i18n.translate("zh", LABELS["description_other"]) == "Pallas 算子"


def test_experiments_are_described_by_their_kernels_specs():
    """Figure titles and report headings describe an experiment by its kernel's SPEC (kernels/*.py), whose
    description the catalog holds; v4, v3's kernel over other blocks, says so."""
    from tpu_matmul_repro.figures.labels import experiment_description
    from tpu_matmul_repro.kernels import DECLARED

    for name, facts in DECLARED.items():
        assert experiment_description(name, name, str) == facts.description
        assert (facts.description, None) in i18n.scope_messages()
    assert experiment_description("v4", "v3", str) == "v3's kernel over other block sizes"
    zh = i18n.translations("zh").gettext
    assert experiment_description("v4", "v3", zh) == "v3 的算子，换用其他分块大小"
    assert experiment_description("v9", None, str) == "Pallas kernel"
    from tpu_matmul_repro.figures.style import drawable_characters

    assert set(zh(DECLARED["v1"].description)) <= set(drawable_characters())  # the CJK font has them
