"""The then-and-now section's sentences on which component doubled the VMEM request follow from the
study's data (studies/then_and_now/data/mechanism*.csv, written by mechanism.py), in both languages,
and say nothing when the data do not support them. That the report's section carries them:
tests/test_report.py (it renders the report from the core's fixture table)."""
import re

import pandas as pd
import pytest

from tpu_matmul_repro.experiments.core.i18n import translations
from tpu_matmul_repro.experiments.core.units import MiB
from tpu_matmul_repro.studies.then_and_now import mechanism_text as text

MECHANISM, VERSIONS = text.read()
pytestmark = pytest.mark.skipif(MECHANISM is None or VERSIONS is None,
                                reason="studies/then_and_now/data/mechanism*.csv not written yet")


NUMBER = re.compile(r"(?<![\d.])\d+\.\d\d(?![\d.])")  # 9.07, not the 0.24 of libtpu 0.0.24


def english(message):
    return message


def bytes_of(pair, bm, bk, bn):
    rows = MECHANISM[(MECHANISM.jax == pair["jax"]) & (MECHANISM.libtpu == pair["libtpu"])
                     & (MECHANISM.bm == bm) & (MECHANISM.bk == bk) & (MECHANISM.bn == bn)]
    assert len(rows) == 1
    return float(rows.iloc[0].vmem_bytes)


def mib_numbers(sentence):
    return [float(x) for x in re.findall(r"(\d+\.\d\d) MiB", sentence)]


def test_the_data_say_neither_component_alone_doubles():
    table = text.per_configuration(MECHANISM)
    assert table.doubled.all() and set(table.component) == {"neither alone"}


def mib_list(pair, blocks):
    return " and ".join(f"{bytes_of(pair, *b) / MiB:.2f}" for b in blocks) + " MiB"


def test_sentences_quote_the_csv():
    first, second, source = text.sentences(MECHANISM, VERSIONS, english)
    v2 = (512, 2048, 512)
    one_buffer = (512 * 2048 + 2048 * 512 + 512 * 512) * 4 / MiB  # float32 blocks of v2 at 2048
    before, after, new_jax, new_libtpu = (bytes_of(pair, *v2) / MiB for pair in
                                          (text.BEFORE, text.AFTER, text.NEW_JAX, text.NEW_LIBTPU))
    assert mib_numbers(first)[:6] == [round(x, 2) for x in (before, one_buffer, before - one_buffer, after,
                                                            new_jax, new_libtpu)]
    assert after == pytest.approx(2 * one_buffer, rel=text.DOUBLED_TOLERANCE)
    assert "Neither component alone doubled" in first
    blocked = [(512, 1024, 1024), (1024, 1024, 1024)]
    assert f"({mib_list(text.BEFORE, blocked)}, doubled to {mib_list(text.AFTER, blocked)} only" in first
    # the second sentence's versions: forced 8 keeps the request, forced 9 (and the default) doubles it
    after = VERSIONS[(VERSIONS.jax == "0.8.1") & (VERSIONS.libtpu == "0.0.30") & (VERSIONS.bm == 512)
                     & (VERSIONS.bk == 2048)].set_index("ir_version").vmem_bytes
    assert mib_numbers(second) == [round(after["8"] / MiB, 2), round(after["9"] / MiB, 2)]
    assert after["default"] == after["9"]
    assert "version 9" in second and "libtpu 0.0.24 cannot read it" in second
    assert "commit 588c281273 (jaxlib/mosaic/dialect/tpu/transforms/serde.cc, version 8 to 9)" in source


def test_the_source_sentence_needs_the_data_to_show_what_the_commit_says():
    """The commit says version 9 no longer falls back to one buffer when out of VMEM: the sentence
    comes only where the after pair's version-9 compiles ran out of VMEM and its older ones fit."""
    fits = VERSIONS.copy()
    after = (fits.jax == text.AFTER["jax"]) & (fits.libtpu == text.AFTER["libtpu"])
    fits.loc[after & (fits.ir_version == "9"), "status"] = "ok"  # version 9 compiled within the limit
    assert len(text.sentences(MECHANISM, fits, english)) == 2
    assert len(text.sentences(MECHANISM, VERSIONS, english)) == 3


def test_chinese_sentences_carry_the_same_numbers():
    zh = translations("zh").gettext
    for en, cn in zip(text.sentences(MECHANISM, VERSIONS, english), text.sentences(MECHANISM, VERSIONS, zh),
                      strict=True):
        assert cn != en
        assert sorted(NUMBER.findall(cn)) == sorted(NUMBER.findall(en))
        assert "，" in cn or "：" in cn


def test_a_cross_pair_that_doubles_names_its_component():
    changed = MECHANISM.copy()
    new_jax = (changed.jax == text.NEW_JAX["jax"]) & (changed.libtpu == text.NEW_JAX["libtpu"])
    for blocks in changed[text.BLOCKS].drop_duplicates().itertuples(index=False):
        after = bytes_of(text.AFTER, blocks.bm, blocks.bk, blocks.bn)
        same = new_jax & (changed.bm == blocks.bm) & (changed.bk == blocks.bk) & (changed.bn == blocks.bn)
        changed.loc[same, "vmem_bytes"] = after
    assert set(text.per_configuration(changed).component) == {"jax"}
    assert text.sentences(changed, VERSIONS, english) == []  # the sentences are for "neither alone" only


def test_no_sentence_without_a_doubling_or_with_a_failed_pair():
    halved = MECHANISM.copy()
    after = (halved.jax == text.AFTER["jax"]) & (halved.libtpu == text.AFTER["libtpu"])
    halved["vmem_bytes"] = halved.vmem_bytes.astype(float)
    halved.loc[after, "vmem_bytes"] = halved.loc[after, "vmem_bytes"] / 2
    assert text.sentences(halved, VERSIONS, english) == []
    failed = MECHANISM.copy()
    cross = (failed.jax == text.NEW_LIBTPU["jax"]) & (failed.libtpu == text.NEW_LIBTPU["libtpu"])
    failed.loc[cross, ["status", "vmem_bytes"]] = ["toolchain_error", None]
    assert text.sentences(failed, VERSIONS, english) == []
    assert text.sentences(None, None, english) == []


def test_the_version_sentence_needs_the_version_gate():
    chose_newest = VERSIONS.copy()
    new_jax = (chose_newest.jax == text.NEW_JAX["jax"]) & (chose_newest.libtpu == text.NEW_JAX["libtpu"])
    chose_newest.loc[new_jax, "chosen_ir_version"] = "newest"
    assert len(text.sentences(MECHANISM, chose_newest, english)) == 1
    no_step = VERSIONS.copy()
    forced = (no_step.jax == text.AFTER["jax"]) & (no_step.libtpu == text.AFTER["libtpu"]) & (
        no_step.ir_version == "8")
    no_step.loc[forced, "vmem_bytes"] = pd.NA  # version 8's compiles lost: no version below 9 to compare
    no_step.loc[forced, "status"] = "compile_error"
    no_step.loc[(no_step.jax == text.AFTER["jax"]) & (no_step.libtpu == text.AFTER["libtpu"]) & (
        no_step.ir_version == "7"), "vmem_bytes"] *= 2  # version 7 doubled too: no step at 9
    assert len(text.sentences(MECHANISM, no_step, english)) == 1
