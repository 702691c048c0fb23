"""The ablation of the timing model's inputs: its rule, its record and the words about it."""
import re
from pathlib import Path

import pandas as pd
import pytest

from tpu_matmul_repro.analysis import ablation
from tpu_matmul_repro.analysis import timing_model as tm

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "docs" / "data" / "model_ablation.csv"
DOCS = ROOT / "docs" / "timing-model.md"


@pytest.fixture(scope="module")
def record() -> pd.DataFrame:
    return pd.read_csv(RECORD)


def test_every_constant_of_the_model_has_a_variant_without_it():
    taken_out = {name for v in ablation.VARIANTS if v.change == "without" for name, _ in v.fixed}
    assert taken_out == set(tm.PARAMS)
    added = {name for v in ablation.VARIANTS if v.change == "with" for name, _ in v.extra}
    assert added == set(tm.EXTRA)


def test_the_record_is_the_current_variants_and_rule(record):
    assert list(record.variant) == [v.name for v in ablation.VARIANTS]
    # the deltas are against the model's row, but for rows kept from an earlier record (against its model)
    fresh = ~record.note.fillna("").str.startswith(ablation.RECORDED)
    assert fresh.iloc[0] and (~fresh).sum() <= 3  # at most the Pallas-cycles rows are kept
    for scope in ablation.SCOPES:
        against = record[f"loeo {scope}"] - record[f"loeo {scope}"].iloc[0]
        assert (record[f"delta {scope}"] - against)[fresh].abs().max() < 1e-6  # the file's %.6g
    assert [ablation.earns_place(r) for r in record.to_dict("records")][1:] == list(record.earns_place[1:])


def test_every_input_the_model_keeps_earns_its_place_and_no_other_does(record):
    """The model's inputs: each one taken out raises the held-out error from 2048 or at 8192 by the
    margin; none of the inputs outside it lowers it so."""
    without = record[record.change == "without"]
    assert without.earns_place.astype(bool).all(), without[["variant", "earns_place"]]
    raised = without[["delta size >= 2048", "delta size 8192"]].max(axis=1)
    assert (raised >= ablation.MARGIN).all()
    assert not record[record.change == "with"].earns_place.astype(bool).any()


def test_the_docs_print_the_record(record):
    text = DOCS.read_text()
    block = re.search(r"<!-- ablation:start -->\n(.*?)\n<!-- ablation:end -->", text, re.S).group(1)
    assert block == ablation.markdown(record)


def test_the_docs_state_the_goals_and_where_the_model_stands(record):
    """The goals sentence is the record's model row against ablation's goals, and says so right."""
    text = DOCS.read_text()
    markers = r"<!-- ablation-goals:start -->\n(.*?)\n<!-- ablation-goals:end -->"
    block = re.search(markers, text, re.S).group(1)
    assert block == ablation.targets(record)
    model = record.iloc[0]
    for scope, goal in ablation.ERROR_GOALS.items():
        assert f"{scope} {model[f'loeo {scope}']:.3f} (goal ≤ {goal}: " in block
    lo, hi = ablation.COVERAGE_GOAL
    assert f"(goal {lo:.2f} to {hi:.2f})" in block


def test_the_docs_words_match_the_record(record):
    """The sentences under the table: what they say of the Pallas cycles and bandwidth_fraction."""
    text = " ".join(DOCS.read_text().split())
    by = record.set_index("variant")
    bandwidth = by.loc["with bandwidth_fraction, fitted in [0.05, 1]"]
    assert f"raises it at 8192 by {bandwidth['delta size 8192']:.3f}" in text
    assert (f"(over all points by {bandwidth['delta all']:.3f}, from 2048 by "
            f"{bandwidth['delta size >= 2048']:.3f})") in text
    assert all(bandwidth[f"delta {s}"] > 0 for s in ablation.SCOPES)  # "raises the error in every scope"
    earlier = by.loc["with step_cycles instead of dma_cycles"]  # the model before dma_cycles joined
    assert f"lowered the error from 2048 to {earlier['loeo size >= 2048']:.3f}" in text
    model = by.loc[ablation.DEFAULT]
    assert (f"lowered the 8192 error to {model['loeo size 8192']:.3f} (by {earlier['delta size 8192']:.3f}; "
            f"from 2048 up by {-earlier['delta size >= 2048']:.3f})") in text
    mxu = by.loc["with mxu_fill_rows, fitted in [0, 1024]"]
    assert f"8192 up by {mxu['delta size 8192']:.3f}" in text
    assert mxu["delta all"] < 0 and mxu["delta size >= 2048"] < 0  # "the lowest error over all ... 2048"
    trusted = by.loc["with Pallas cycles trusted, profile_scale in [0.9, 1.1]"]
    assert "every scope is twice as bad" in text
    assert all(trusted[f"loeo {s}"] >= 1.9 * by.loc[ablation.DEFAULT, f"loeo {s}"] for s in ablation.SCOPES)
    floor = by.loc["with Pallas cycles, profile_scale in [0.1, 2]"]
    assert floor["delta size 8192"] > 0  # "make the 8192 error worse"
    xla = by.loc["without XLA's cost-model cycles"]
    assert f"cycles (by {xla['delta size >= 2048']:.3f} from 2048)" in text


@pytest.mark.parametrize("cycles, note", [
    ([None, None, None], "not computed: this run made no static-profile compile"),
    ([9e6, None, None], "1 of the post's 2 Pallas points carry libtpu's cycles"),
])
def test_the_pallas_cycles_rows_are_scored_where_some_points_carry_cycles(monkeypatch, cycles, note):
    """The profile study profiles grids up to compile_study.profile_max_steps steps only: its rows are
    scored with the points it has cycles for and say how many; without any, not computed."""
    points = pd.DataFrame(dict(kernel=["v5", "v3", "xla"], est_cycles=cycles))
    scored = []

    def fake_score(points, variant, with_coverage=True):
        scored.append(variant.name)
        return {f"loeo {scope}": 0.05 for scope in ablation.SCOPES}

    monkeypatch.setattr(ablation, "score", fake_score)
    table = ablation.ablation_table(points).set_index("variant")
    for variant in (v for v in ablation.VARIANTS if v.needs_pallas_cycles):
        assert table.loc[variant.name, "note"].startswith(note)
        assert (variant.name in scored) == note[0].isdigit()
    assert pd.isna(table.iloc[0].get("note"))  # the model's own row has no such note
