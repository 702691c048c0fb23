"""The one translation system (experiments/core/i18n.py): the catalog holds exactly the messages the
figures, report and studies mark, each translated with the same placeholders, in the glossary's terms."""
import re
import shutil

import pytest
import yaml

from tpu_matmul_repro.experiments.core import i18n
from tpu_matmul_repro.figures.catalog import CATALOG
from tpu_matmul_repro.figures.labels import LABELS, SOURCE_NAMES, text
from tpu_matmul_repro.report.typography import message_problems
from tpu_matmul_repro.studies.history.figure import TEXT as HISTORY_TEXT


def key(message) -> tuple[str, str | None]:
    """(msgid, context) of a message as N_() or NC_() stored it."""
    return (message[1], message[0]) if isinstance(message, tuple) else (message, None)


def test_catalog_is_complete():
    assert i18n.translations("zh").gettext("Abstract") == "摘要"
    assert i18n.translate("zh", "Matrix size (M = K = N)") == "矩阵尺寸（M = K = N）"


@pytest.mark.parametrize("msgid, msgstr", [("Abstract", "摘要"),  # a report's, a figure's
                                           ("Matrix size (M = K = N)", "矩阵尺寸（M = K = N）")])
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
    assert text("zh", "out_of_sample", pct=12.4, n=5) == "样本外误差中位数为 12%（5 个点）"
    assert text("en", "blocks", blocks="(512, 1024, 256)") == "blocks (512, 1024, 256)"
    assert text("en", "interval_band").startswith("shaded: the timing model's 80 % prediction interval")
    assert text("zh", "limit_default", limit=16) == "默认 scoped VMEM 上限 16 MiB"


def zh_messages() -> list[tuple[str, str]]:
    """(English, Chinese) of every message of every catalog (a plural message: its plural, its one form)."""
    out = []
    for study in i18n.scopes():
        for m in i18n.read_catalog("zh", study):
            if m.id:
                english = m.id if isinstance(m.id, str) else m.id[-1]
                out.append((english, m.string if isinstance(m.string, str) else m.string[0]))
    return out


def test_chinese_uses_the_glossary():
    """Every Chinese string of the figures, the report and the studies uses the fixed terms, not their
    variants."""
    terms, avoid = i18n.glossary("zh")
    strings = [zh for _, zh in zh_messages()]
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
    assert experiment_description("v4", "v3", zh) == "v3 的算子，换用其他分块尺寸"
    assert experiment_description("v9", None, str) == "Pallas kernel"
    from tpu_matmul_repro.figures.style import drawable_characters

    assert set(zh(DECLARED["v1"].description)) <= set(drawable_characters())  # the CJK font has them


def glossary_concepts() -> list[dict]:
    return yaml.safe_load((i18n.LOCALE / "zh" / "glossary.yaml").read_text(encoding="utf-8"))["concepts"]


def concept_problems(english: str, chinese: str, concepts) -> list[str]:
    """Where a message breaks the glossary's one word per concept (glossary.yaml: concepts)."""
    words = re.sub(r"%\(\w+\)[.\d]*[sdf]", "", english)  # %(target)s names a value, not the concept
    out = []
    for c in concepts:
        if re.search(c["en"], words, re.I) and c["zh"] not in chinese:
            out.append(f"{english!r} -> {chinese!r}: write {c['zh']}")
        allowed = c["en"] + (f"|{c['also']}" if c.get("also") else "")
        if c.get("only") and c["zh"] in chinese and not re.search(allowed, words, re.I):
            out.append(f"{english!r} -> {chinese!r}: {c['zh']} stands for /{c['en']}/ only")
    return out


def test_one_chinese_word_per_concept():
    """Claim, verdict and finding are 论断, 判定 and 发现, Pallas's pipelining 流水线 and the run's
    pipeline 工作流, a kernel's configuration 配置 and the config file 配置文件, in every message, both
    ways: the English names the concept where the Chinese uses its word."""
    concepts = glossary_concepts()
    problems = [p for english, chinese in zh_messages() for p in concept_problems(english, chinese, concepts)]
    assert not problems, problems[:5]
    assert {c["zh"] for c in concepts} >= {"论断", "判定", "发现", "流水线", "工作流", "配置文件"}


@pytest.mark.parametrize("english, chinese", [
    ("Claims checked", "原文结论核查"),  # 论断 missing
    ("the pipeline's own environment", "流水线自身的环境"),  # 工作流 for the run's pipeline
    ("where the config runs it", "配置启用时"),  # 配置文件
    ("a real TPU can still be slower where the Pallas pipeline stalls", "真实 TPU 仍可能更慢"),
    ("Every speed this run gives is modelled", "本报告中的速度都是估计值"),  # modelled called estimated
    ("TFLOP/s, estimated", "TFLOP/s，建模值"),  # and the reverse
])
def test_the_concept_check_finds_a_mixed_up_word(english, chinese):
    assert concept_problems(english, chinese, glossary_concepts())


def test_chinese_punctuation_in_every_translation():
    """Full-width ，；：（） in Chinese text, no space after them, 80% without a space (the rendered page
    is held to the same rules: tests/test_report.py)."""
    problems = [p for _, chinese in zh_messages() for p in message_problems(chinese)]
    assert not problems, problems[:5]


@pytest.mark.parametrize("text", [
    "原文的 7 条论断中，4 条成立。 1 条不符", "约 20 % 的偏差", "（已标记)", "190.3 (已标记)",
    "上限：(512, 512, 512) 16 MiB; (1024, 1024, 1024) 32 MiB（默认", "在各代 TPU（v5e, v6e）上",
    "引用此图： The authors", "误差中位数为 %(pct).0f %%"])
def test_the_punctuation_check_finds_latin_punctuation(text):
    assert message_problems(text), text


@pytest.mark.parametrize("text", [
    "分块 (512, 1024, 1024) 在尺寸 8192 时", "对每个 (bm, bn) 组合", "Pallas v2, N = 4 的 VMEM",
    "cycles_method = no_static_profile）", "达到 XLA 的 %(pct).0f%%。", "English only, no Chinese: a, b; c"])
def test_the_punctuation_check_passes_code_and_numbers(text):
    assert not message_problems(text), message_problems(text)


def repeated_clauses(text: str) -> list[str]:
    """Clauses of a Chinese string that repeat the end of the clause before them ("未用 TPU。TPU。")."""
    parts = [p.strip() for p in re.split(r"[。；，、：]", text)]
    return [b for a, b in zip(parts, parts[1:], strict=False) if b and a.endswith(b)]


def test_no_translation_repeats_a_clause_back_to_back():
    problems = [(zh, repeated_clauses(zh)) for _, zh in zh_messages() if repeated_clauses(zh)]
    assert not problems, problems[:5]
    assert repeated_clauses("由 libtpu 的估计建模，未用 TPU。TPU。") == ["TPU"]
    assert repeated_clauses("成立。不符。") == []
