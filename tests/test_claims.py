"""The verdict rules (analysis/claims.py), on the synthetic table of tests/test_timing_model.py:
each kind's verdict recomputed from the numbers its claims.csv row prints, and measurements that decide
only the claims they cover."""
import json
import math

import numpy as np
import pandas as pd
import pytest
from test_timing_model import VERSIONS, synthetic_model, synthetic_table

from tpu_matmul_repro.analysis import claims
from tpu_matmul_repro.analysis import timing_model as tm
from tpu_matmul_repro.experiments.core.schema import frame as to_frame
from tpu_matmul_repro.experiments.core.units import MiB

pytestmark = pytest.mark.xdist_group("claims")


@pytest.fixture(scope="module")
def table():
    return synthetic_table(noise=0.05, seed=5)


@pytest.fixture(scope="module")
def model(table):
    return synthetic_model(noise=0.05, seed=5)  # measured rows added below change no published point


@pytest.fixture(scope="module")
def rows(table, model):
    return claims.claims_table(table, model).set_index("claim_id")


def rule(margin, band, post_margin, post_error=0.0):
    """The rule as docs/verdicts.md states it, written out again: the post's numbers fail a claim only
    beyond their reading error."""
    if margin + band < 0:
        return "differs"
    if margin < 0:
        return "differs" if post_margin < -post_error else "inconclusive"
    return "holds" if post_margin >= -post_error else "inconclusive"


def test_the_post_s_numbers_decide_nothing_within_their_reading_error():
    """v4 in the post: (512, 512, 512) 92.7 against (1024, 1024, 1024) 90.3 TFLOP/s, 2.6 % apart, each
    read to about 2 % of a 0-184 TFLOP/s axis: no support for the claim, and no failure of it either."""
    published = pd.DataFrame(dict(source="published", target="v5e", experiment="v4",
                                  tflops=[167.0, 92.7, 90.3, 10.3]))
    error = math.hypot(claims.reading_error(published, "v4", 92.7),
                       claims.reading_error(published, "v4", 90.3))
    assert error == pytest.approx(0.0567, abs=5e-4)  # ±3.7 TFLOP/s on each
    post_margin = math.log(92.7 / 90.3)
    assert claims.decided(0.07, 0.13, post_margin, error) == ("holds", "holds_reading")
    assert claims.decided(-0.02, 0.05, -post_margin, error) == ("inconclusive", "inconclusive_band")
    assert claims.decided(-0.02, 0.05, -post_margin) == ("differs", "differs_both")  # without it
    assert claims.decided(0.07, 0.13, -0.2, error) == ("inconclusive", "inconclusive_post")
    note = claims.reason_text("best", "holds_reading", dict(
        size=8192, claimed="(512, 512, 512)", claimed_tflops=91.6, rival="(1024, 1024, 1024)",
        rival_tflops=85.9, ratio=1.07, ratio_lo=0.94, ratio_hi=1.22, post_rival="(1024, 1024, 1024)",
        post_rival_tflops=90.3,
        post_claimed_tflops=92.7, test="model_vs_model", post_error_pct=100 * math.expm1(error)))
    assert "within their reading error (±5.8 %)" in note and "and so do the post's own" not in note


def values(row) -> dict:
    return json.loads(row["values"])


def test_every_claim_has_a_kind_and_a_rule_with_its_thresholds():
    for claim in claims.REGISTRY:
        assert claims.rule_text(claim.kind) and claim.kind in claims.CHECKS
    assert "1.22" in claims.rule_text("about") and "0.2" in claims.rule_text("about")
    assert "90 %" in claims.rule_text("near")


def test_about_recomputed_from_its_row(rows):
    row = rows.loc["v3_128_about_10"]
    v = values(row)
    margin = claims.ABOUT - abs(math.log(v["ours"] / float(v["claimed"])))
    post_margin = claims.ABOUT - abs(math.log(v["post"] / float(v["claimed"])))
    assert margin == pytest.approx(v["margin"], abs=1e-3)
    assert post_margin == pytest.approx(v["post_margin"], abs=1e-3)
    assert v["lo"] == pytest.approx(v["ours"] * math.exp(-v["band"]), rel=1e-3)
    assert row.verdict == rule(v["margin"], v["band"], v["post_margin"], v["post_error"])
    assert row.verdict == claims.verdict_of(row)
    assert f"{v['ours']:.1f} TFLOP/s at 8192" in row.reason
    assert "the timing model against the claimed" in row.reason


def test_best_blocks_recomputed_from_its_row(rows):
    row = rows.loc["v4_best_512"]
    v = values(row)
    assert math.log(v["claimed_tflops"] / v["rival_tflops"]) == pytest.approx(v["margin"], abs=1e-3)
    post = math.log(v["post_claimed_tflops"] / v["post_rival_tflops"])
    assert post == pytest.approx(v["post_margin"], abs=1e-3)
    assert row.verdict == rule(v["margin"], v["band"], v["post_margin"], v["post_error"])
    assert row.verdict == claims.verdict_of(row)
    assert "two numbers of the timing model against each other" in row.reason


def test_nearly_matches_recomputed_from_its_row(rows):
    row = rows.loc["v5_matches_xla"]
    v = values(row)
    assert math.log(v["pct"] / 100 / claims.NEAR) == pytest.approx(v["margin"], abs=1e-3)
    assert math.log(v["post_pct"] / 100 / claims.NEAR) == pytest.approx(v["post_margin"], abs=1e-3)
    assert row.verdict == rule(v["margin"], v["band"], v["post_margin"], v["post_error"])
    assert row.verdict == claims.verdict_of(row)
    assert claims.TESTS[v["test"]] in row.reason


def test_beats_recomputed_from_its_row(rows):
    row = rows.loc["bf16_beats_f32"]
    v = values(row)
    assert math.log(v["bf16"] / v["f32"]) == pytest.approx(v["margin"], abs=1e-3)
    assert math.log(v["post_bf16"] / v["post_f32"]) == pytest.approx(v["post_margin"], abs=1e-3)
    # two figures: their bands add as independent errors
    assert v["band"] > 0
    assert row.verdict == rule(v["margin"], v["band"], v["post_margin"], v["post_error"])
    assert row.verdict == claims.verdict_of(row)


def test_compiles_recomputed_from_its_row(rows):
    for claim in ("v1_fails_above_1024", "v2_up_to_2048", "v5_1024_fails_from_2048"):
        row = rows.loc[claim]
        v = values(row)
        same = v["ok"] == v["post_ok"] and v["fail"] == v["post_fail"]
        assert row.verdict == ("holds" if same else "differs") == claims.verdict_of(row)


def test_the_rule_on_each_side_of_its_thresholds():
    assert claims.decided(0.1, 0.2, 0.1)[0] == "holds"
    assert claims.decided(-0.1, 0.2, 0.1)[0] == "inconclusive"  # the band reaches the claim
    assert claims.decided(-0.3, 0.2, 0.1)[0] == "differs"  # the whole band fails it
    assert claims.decided(-0.1, 0.2, -0.1)[0] == "differs"  # and so does the post
    assert claims.decided(0.1, 0.2, -0.1)[0] == "inconclusive"  # only this run supports it
    assert claims.decided(-0.01, 0.0, 0.1)[0] == "differs"  # a measurement has no band


def measured_rows(table, configs, label="tpu-vm"):
    """Measured rows (v5e, one run) of `configs` [(experiment, kernel, dtype, size, blocks)], timed
    by the synthetic model itself."""
    out = []
    for experiment, kernel, dtype, size, blocks in configs:
        est = table[(table.source == "estimate") & (table.kernel == kernel) & (table.dtype == dtype)
                    & (table.m == size) & (table.experiment == experiment)]
        if blocks is not None:
            est = est[(est.bm == blocks[0]) & (est.bk == blocks[1]) & (est.bn == blocks[2])]
        r = est.iloc[0]
        device = tm.device_seconds(tm.features(r), tm.Constants(1.0, 0.8, 100.0, 1e-4, 2.0, 50.0))
        bm, bk, bn = (None, None, None) if blocks is None else blocks
        out.append(dict(source="measured", target="v5e", experiment=experiment, kernel=kernel, dtype=dtype,
                        m=size, k=size, n=size, bm=bm, bk=bk, bn=bn, status="ok", seconds=device,
                        wall_seconds=device + 1e-4, run_label=label, vmem_limit_bytes=16 * MiB,
                        timestamp="2026-11-30T10:00:00+00:00", raised_limit=False, search=False))
    return to_frame(out, VERSIONS)


def test_a_partial_measurement_file_leaves_every_claim_it_does_not_cover(table, rows, model):
    """Issue 39: a small v5e measurement file (XLA and v5 at sizes no claim is about) changes no claim;
    one that measures both configurations of "bf16 beats f32" at 8192 decides that claim alone."""
    partial = measured_rows(table, [("v5", "xla", "bfloat16", 1024, None),
                                    ("v5", "v5", "bfloat16", 1024, (512, 512, 512)),
                                    ("v5", "v5", "bfloat16", 2048, (512, 1024, 1024))])
    after = claims.claims_table(pd.concat([table, partial], ignore_index=True), model).set_index("claim_id")
    for col in ("verdict", "source_kind", "reason", "this_value"):
        assert (after[col] == rows[col]).all(), col
    covering = measured_rows(table, [("v5", "v5", "bfloat16", 8192, (512, 512, 512)),
                                     ("v4", "v3", "float32", 8192, (512, 512, 512))])
    after = claims.claims_table(pd.concat([table, covering], ignore_index=True), model).set_index("claim_id")
    assert after.loc["bf16_beats_f32", "source_kind"] == "measured"
    assert "measured" in after.loc["bf16_beats_f32", "reason"]
    others = after.index != "bf16_beats_f32"
    for col in ("verdict", "source_kind", "reason"):
        assert (after.loc[others, col] == rows.loc[others, col]).all(), col
    assert np.isclose(values(after.loc["bf16_beats_f32"])["band"], 0.0)


@pytest.mark.slow
def test_page_one_tables_and_figures_print_one_value_per_configuration(table, rows):
    """Item 4 of issue 36: the claims (page 1), the experiment tables and the figures' data all show
    the out-of-sample value of a configuration: the refit without its figure."""
    import html as entities

    from tpu_matmul_repro.figures.plots import experiment_rows
    from tpu_matmul_repro.report import build
    from tpu_matmul_repro.report.tables import experiment_table

    v = values(rows.loc["bf16_beats_f32"])
    oom = table.status == "vmem_oom"  # the fixture's failures carry no request: give them one to print
    table = table.assign(vmem_bytes=table.vmem_bytes.mask(oom & table.vmem_bytes.isna(), 20 * MiB))
    page = entities.unescape(build.render_html(
        table, lang="en", config_yaml="targets: [v5e]\n", targets=["v5e"], figure_names=set(),
        correctness={"passed": 1, "total": 1}, claims=rows.reset_index()))
    front = page[page.index('id="abstract"'):page.index('<nav id="contents">')]
    for experiment, dtype, ours in (("v5", "bfloat16", v["bf16"]), ("v4", "float32", v["f32"])):
        shown = f"{ours:.1f}"
        assert shown in front  # page 1: the claim's evidence
        cells = experiment_table(table, experiment, dtype, "v5e", lambda m: m)
        row = next(r for r in cells["rows"] if r["label"].startswith("(512, 512, 512)")
                   or "512, 512, 512" in r["label"])
        assert row["cells"][cells["sizes"].index(8192)]["est"] == shown  # the table beside the figure
        drawn, modelled = experiment_rows(table[(table.experiment == experiment) & (table.target == "v5e")
                                                & (table.dtype == dtype)])
        assert modelled
        point = drawn[(drawn.source == "estimate") & (drawn.bm == 512) & (drawn.bk == 512)
                      & (drawn.m == 8192)]
        assert f"{float(point.model_post_tflops.iloc[0]):.1f}" == shown  # what the figure draws
        assert point.model_fit.iloc[0] == f"published v5e without {experiment}"


def test_a_compile_claim_is_decided_on_the_sizes_both_sides_tried(table, model):
    """The post's v2 fails from 4096; a run that compiled only up to 2048 cannot contradict that."""
    from test_timing_model import published_row

    from tpu_matmul_repro.experiments.core.cases import Case

    fails = to_frame([published_row("v2", Case("v2", "float32", 4096, 4096, 4096, 1024, 4096, 1024),
                                    status="failed")], {}).drop(columns=list(VERSIONS))
    row = claims.claims_table(pd.concat([table, fails], ignore_index=True), model).set_index("claim_id").loc[
        "v2_up_to_2048"]
    assert row.verdict == "holds" == claims.verdict_of(row), row.reason
    assert values(row)["post_fail"] == "–"  # 4096 is outside the sizes compared


def test_the_source_column_names_the_class_of_the_claim_s_numbers(table, rows, model):
    """claims.csv's source column (and the report's, in Chinese) begins with the class of the numbers the
    verdict used: a VMEM verdict is libtpu's estimate, a speed through the timing model is modelled, a
    measurement is measured (analysis/number_classes.py), never "estimated" for a modelled speed."""
    from tpu_matmul_repro.experiments.core.i18n import translations

    covering = measured_rows(table, [("v5", "v5", "bfloat16", 8192, (512, 512, 512)),
                                     ("v4", "v3", "float32", 8192, (512, 512, 512))])
    measured = claims.claims_table(pd.concat([table, covering], ignore_index=True), model)
    measured = measured.set_index("claim_id")
    expected = {"compile": ("estimated: ", "估计值："), "model": ("modelled: ", "建模值："),
                "measured": ("measured: ", "实测值：")}
    zh = translations("zh").gettext
    seen = set()
    for frame in (rows, measured):
        for _, row in frame.iterrows():
            kind = row["source_kind"]
            if kind == "none":
                continue
            en, chinese = expected[kind]
            assert row["source"].startswith(en), (kind, row["source"])
            assert claims.source_text(kind, values(row), zh).startswith(chinese)
            seen.add(kind)
    assert seen == set(expected)
    assert rows.loc["v3_128_about_10", "source_kind"] == "model"  # a speed: modelled, not estimated


def test_a_claim_added_as_one_record_is_checked_and_stated(table, model, monkeypatch):
    """docs/development.md's recipe "add a claim", followed: one record of an existing kind, and its row
    is in the claims table, its verdict recomputed from its numbers, and its configuration in the
    report's findings of its experiment."""
    from tpu_matmul_repro.report import core_sections, findings

    added = claims.Claim("v5_256_about_50", "about", "v5 with 256-blocks reaches about 50 TFLOP/s",
                         "v5", "v5", "bfloat16", (256, 256, 256), claimed=50.0)
    monkeypatch.setattr(claims, "REGISTRY", (*claims.REGISTRY, added))
    table_rows = claims.claims_table(table, model).set_index("claim_id")
    row = table_rows.loc["v5_256_about_50"]
    assert row.claim == added.wording and row.kind == "about" and row.reason_id == "about"
    assert row.verdict == claims.verdict_of(row) != "not tested"
    assert values(row)["claimed"] == "50" and "8192" in row.reason
    found = dict(target="v5e", modelled=False, best=[], findings=findings.claim_findings(table, "v5e"))
    stated = core_sections.experiment_findings("v5", found, str)
    assert any(s.startswith("On v5e, v5 with 256-blocks reaches an estimated") for s in stated), stated
