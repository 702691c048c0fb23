"""The advisor scored on public measurements (analysis/public_regret.py): the regret of its pick among
measured configurations, its picks against a measured XLA, the tables of docs/advisor.md recomputed
from the recorded rows, the floor the public errors put under off-v5e bands, and the advisor's lines
that quote them."""
import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_timing_model import synthetic_model, synthetic_table

from tpu_matmul_repro.advise import cli
from tpu_matmul_repro.advise import model as advisor_model
from tpu_matmul_repro.analysis import intervals, model_columns
from tpu_matmul_repro.analysis import public_regret as pr
from tpu_matmul_repro.analysis.public_measurements import load

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "advisor.md"
RECORD = ROOT / "docs" / "data"


def row(kernel, measured, model, *, blocks=(None, None, None), generation="v5e", m=1024, source="s",
        timing="host", factor=1.1, inside=True):
    bm, bk, bn = blocks
    return dict(generation=generation, dtype="bfloat16", m=m, k=m, n=m, source=source, timing=timing,
                kernel=kernel, bm=bm, bk=bk, bn=bn, measured_seconds=measured, model_seconds=model,
                log_ratio=math.log(model / measured), hi80=model * factor, inside80=inside)


def test_the_pick_is_the_fastest_modelled_and_its_regret_the_measured_slowdown():
    scores = pd.DataFrame([
        row("xla", 1.0, 1.05),
        row("pallas", 1.25, 0.90, blocks=(512, 512, 512)),  # the model's pick, 25 % slower than XLA
        row("pallas", 1.10, 1.00, blocks=(256, 256, 256)),
        row("xla", 2.0, 2.0, m=2048),  # one configuration at this shape: no choice
        row("xla", 1.0, 1.0, m=4096, source="a"), row("pallas", 1.5, 1.2, m=4096, source="b",
                                                      blocks=(512, 512, 512)),  # two sources: no choice
    ])
    table = pr.choices(scores)
    assert len(table) == 1
    r = table.iloc[0]
    assert (r.best, r.pick, r.configs) == ("XLA", "(512,512,512)", 3)
    assert r.regret == pytest.approx(0.25)
    assert r.pallas_pick_vs_xla and r.loses_to_xla
    assert r.tie_set == 1 and not r.best_in_tie_set  # 0.9 x 1.1 = 0.99 < 1.0: only the pick
    summary = pr.by_generation(scores).iloc[0]
    assert (summary.shapes, summary.pick_is_best, summary.losses_to_xla) == (1, 0, 1)
    assert summary.n == 6 and summary.coverage80 == 1.0


def test_a_pick_that_is_the_best_has_no_regret_and_no_loss():
    scores = pd.DataFrame([row("xla", 1.0, 0.9), row("pallas", 1.25, 1.0, blocks=(512, 512, 512))])
    r = pr.choices(scores).iloc[0]
    assert r.regret == 0 and r.pick == "XLA" and not r.pallas_pick_vs_xla and not r.loses_to_xla


def advice_rows(block_ms, xla_ms, m=1024, call_ms=0.01):
    rows = [dict(target="v6e", m=m, k=m, n=m, dtype="bfloat16", kernel="v5", rank=1, bm=512, bk=512, bn=512,
                 model_device_ms=block_ms, model_post_ms=block_ms + call_ms),
            dict(target="v6e", m=m, k=m, n=m, dtype="bfloat16", kernel="xla", rank=np.nan, bm=np.nan,
                 bk=np.nan, bn=np.nan, model_device_ms=xla_ms, model_post_ms=xla_ms + call_ms)]
    return pd.DataFrame(rows)


def test_a_block_pick_loses_where_xla_measured_faster_than_its_modelled_time():
    scores = pd.DataFrame([row("xla", 0.9e-3, 1.05e-3, generation="v6e", timing="device"),
                           row("xla", 1.2e-3, 1.05e-3, generation="v6e", timing="device", source="t"),
                           row("xla", 0.5e-3, 0.45e-3, generation="v6e", timing="host", m=2048)])
    advice = pd.concat([advice_rows(1.0, 1.1), advice_rows(0.5, 0.45, m=2048)], ignore_index=True)
    picks = pr.advisor_picks(scores, advice).set_index(["m", "source"])
    assert list(picks.pick) == ["(512,512,512)", "(512,512,512)", "XLA"]
    assert picks.loc[(1024, "s")].loses_to_xla and not picks.loc[(1024, "t")].loses_to_xla
    assert not picks.loc[(2048, "s")].loses_to_xla  # XLA picked: it cannot lose to itself
    # the model is 10 % fast on XLA here at the median (0.45 for 0.5): as slow again, the block's 1.0 ms
    # is 1.11 ms, slower than s's measured 0.9 ms, still faster than t's 1.2 ms
    assert picks.xla_bias.iloc[0] == pytest.approx(math.log(0.45 / 0.5))
    assert picks.loc[(1024, "s")].loses_if_erred_as_xla and not picks.loc[(1024, "t")].loses_if_erred_as_xla
    summary = pr.picks_summary(pr.advisor_picks(scores, advice)).iloc[0]
    assert (summary.rows, summary.shapes, summary.pallas_picks, summary.losses) == (3, 2, 2, 1)
    assert summary.median_loss == pytest.approx(1.0 / 0.9 - 1) and summary.losses_if_erred_as_xla == 1


def test_a_search_the_time_budget_cut_is_left_out(tmp_path):
    scores = pd.DataFrame([row("xla", 0.9e-3, 1.05e-3, generation="v6e", timing="device"),
                           row("xla", 0.9e-3, 1.05e-3, generation="v6e", timing="device", m=2048)])
    advice = pd.concat([advice_rows(1.0, 1.1), advice_rows(1.0, 1.1, m=2048)], ignore_index=True)
    advice = advice.assign(status="ok", note="")
    cut = dict(advice.iloc[0], rank=np.nan, bm=256, status="timeout",
               note="not compiled: the time budget ran out (--time-budget)")
    pd.concat([advice, pd.DataFrame([cut])], ignore_index=True).to_csv(tmp_path / "a.csv", index=False)
    read = pr.read_advice(tmp_path / "a.csv")
    assert list(read.cut) == [True, True, False, False]
    assert list(pr.advisor_picks(scores, read).m) == [2048]
    assert "1 searches that the advisor's time budget cut are left out: 1024x1024x1024 bfloat16 on v6e" \
        in pr.markdown(scores, read)


def test_host_timed_rows_compare_the_picks_time_with_the_call():
    scores = pd.DataFrame([row("xla", 1.005e-3, 1.05e-3, generation="v6e", timing="host")])
    picks = pr.advisor_picks(scores, advice_rows(1.0, 1.1, call_ms=0.01))
    assert picks.pick_seconds.iloc[0] == pytest.approx(1.01e-3) and picks.loses_to_xla.iloc[0]


@pytest.fixture(scope="module")
def record():
    scores = pr.read(RECORD / "public_scores.csv")
    advice = pr.read_advice(RECORD / "public_advice.csv")
    return scores, advice


def test_the_record_is_the_public_data(record):
    """The recorded scores are data/public_measurements.csv's rows, in order, with their times (to the
    six significant digits results/public_scores.csv keeps)."""
    scores, _ = record
    data = load()
    assert len(scores) == len(data)
    for column in ("generation", "dtype", "m", "k", "n", "source", "kernel"):
        assert list(scores[column]) == list(data[column])
    assert np.allclose(scores.measured_seconds, data.seconds, rtol=1e-5, atol=0)


def test_the_docs_print_the_tables_of_the_record(record):
    assert pr.in_docs(DOCS) == pr.markdown(*record)
    assert pr.in_docs(ROOT / "docs" / "timing-model.md", pr.BAND_MARKERS) == pr.band_sentence(record[0])


def test_the_docs_words_match_the_record(record):
    scores, advice = record
    text = " ".join(DOCS.read_text().split())
    for r in pr.by_generation(scores).itertuples():
        assert f"| {r.generation} | {r.n} | {r.median_abs_log_ratio:.3f} |" in text
    picks = pr.picks_summary(pr.advisor_picks(scores, advice))
    assert len(picks), "the recorded advice covers no public XLA measurement"
    for r in picks.itertuples():
        assert (f"recommends a block at {r.pallas_picks} of the {r.rows} {r.dtype} measurements" in text
                and f"{-100 * (math.exp(r.xla_bias) - 1):.1f} % fast on XLA" in text
                and f"{r.losses_if_erred_as_xla} of the {r.pallas_picks} would lose" in text)
        assert r.losses == 0 and "none loses by the first count" in text
    v5e = pr.choices(scores)
    v5e = v5e[v5e.generation == "v5e"]
    assert f"{100 * v5e.regret.max():.1f} % slower than the measured XLA" in text


def test_the_command_refuses_a_file_in_one_line(tmp_path, capsys):
    bad = tmp_path / "scores.csv"
    bad.write_text("generation,m\nv5e,1\n")
    assert pr.main([str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "scores.csv" in err and "missing" in err
    assert pr.main([str(tmp_path / "absent.csv")]) == 2
    assert pr.main(["--docs"]) == 2


def test_the_command_writes_the_docs_between_markers(tmp_path, record):
    scores, advice = record
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, markers in zip(pr.PAGES, (pr.MARKERS, pr.BAND_MARKERS), strict=True):
        (docs / name).write_text(f"before\n{markers[0]}\nold\n{markers[1]}\nafter\n")
    scores.to_csv(tmp_path / "s.csv", index=False)
    advice.to_csv(tmp_path / "a.csv", index=False)
    assert pr.main([str(tmp_path / "s.csv"), "--advice", str(tmp_path / "a.csv"), "--docs", str(docs)]) == 0
    page = docs / "advisor.md"
    assert pr.in_docs(page) == pr.markdown(scores, advice)
    assert page.read_text().startswith("before\n") and page.read_text().endswith("after\n")
    assert pr.in_docs(docs / "timing-model.md", pr.BAND_MARKERS) == pr.band_sentence(scores)
    assert pr.read(docs / "data" / "public_scores.csv").equals(scores)


def test_public_errors_set_a_floor_under_off_v5e_bands():
    noisy = synthetic_table(noise=0.1, seed=3)
    fitted = synthetic_model(noise=0.1, seed=3)
    est = noisy[noisy.source == "estimate"]
    rows = pd.concat([est, est.assign(target="v6e", device_kind="TPU v6 lite")], ignore_index=True)
    public = intervals.public_halfwidths(pd.DataFrame(dict(
        generation=["v6e"] * 9 + ["v5e"], log_ratio=[-0.5] * 9 + [-3.0])))
    assert set(public) == {"v6e"} and public["v6e"][0] == 9
    assert public["v6e"][1][0.8] == pytest.approx(0.5)  # ceil(10 x 0.8) = 8th of nine 0.5s
    assert math.isinf(public["v6e"][1][0.95])  # ceil(10 x 0.95) = 10 > 9: no floor at 95 %
    plain = model_columns.modelled(rows, fitted.fits, fitted.band)
    floored = model_columns.modelled(rows, fitted.fits, dataclasses.replace(fitted.band, public=public))
    timed = floored.model_device_seconds.notna()
    v6e = timed & (floored.target == "v6e")
    width = np.log(floored.model_device_seconds_hi80 / floored.model_device_seconds)
    assert (width[v6e] >= 0.5 - 1e-12).all()
    assert np.allclose(floored.loc[timed & ~v6e, "model_device_seconds_hi80"],
                       plain.loc[timed & ~v6e, "model_device_seconds_hi80"])
    hi95 = "model_device_seconds_hi95"  # no floor at 95 %: too few errors
    assert np.allclose(floored.loc[v6e, hi95], plain.loc[v6e, hi95])
    assert floored[v6e].model_interval.str.contains("never narrower than the errors of 9 public").all()


def test_the_advisor_quotes_the_runs_public_scores(tmp_path):
    scores = pd.DataFrame([row("xla", 1.0, 1.05), row("pallas", 1.25, 0.90, blocks=(512, 512, 512)),
                           row("xla", 1.0, 1.1, generation="v6e", inside=False),
                           row("xla", 1.0, 1.0, generation="v6e", m=2048)])
    scores.to_csv(tmp_path / "public_scores.csv", index=False)
    band = intervals.Band({0.8: 0.1, 0.95: 0.2}, 61)
    model = advisor_model.with_public(advisor_model.Model(None, band, "run"), tmp_path)
    assert set(model.band.public) == {"v6e"}
    [line] = cli.public_lines(model, "v6e")
    assert "On v6e, 2 public measurements" in line and "80 % coverage 0.50" in line
    assert f"median error {100 * (math.exp(math.log(1.1) / 2) - 1):.1f} %" in line
    assert ("of 1 shapes with several configurations measured, the model picked a block measured beside XLA "
            "at 1, and that block lost to the measured XLA at 1.") in cli.xla_losses(model, "v5e")
    assert "no shape there has a block measured beside XLA" in cli.xla_losses(model, "v6e")
    assert cli.public_lines(advisor_model.Model(None, band, "run"), "v6e") == []
    (tmp_path / "public_scores.csv").write_text("generation\nv6e\n")
    with pytest.raises(advisor_model.ResultsError, match="public_scores.csv: columns"):
        advisor_model.with_public(advisor_model.Model(None, band, "run"), tmp_path)


def section_scores() -> pd.DataFrame:
    rows = [row("xla", 1.0, 1.05, generation="v6e"), row("xla", 1.0, 0.9, generation="v6e", inside=False),
            row("xla", 1.0, 0.95, generation="v6e", m=1000), row("xla", 1.0, 1.02)]
    scores = pd.DataFrame(rows + [dict(row("xla", 1.0, 1.0, generation="7x"), model_seconds=np.nan,
                                       log_ratio=np.nan, inside80=np.nan)])
    return scores.assign(shape_class=["square", "square", "unaligned", "square", "square"])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_reports_public_section_says_what_the_scores_hold(lang):
    """The section's sentences and table, rendered in both languages, against the scores."""
    from types import SimpleNamespace

    from tpu_matmul_repro.report import build, sections
    from tpu_matmul_repro.report import public_scores as section

    env, trans = build.environment(lang)
    scores = section_scores()
    context = section.context(SimpleNamespace(tables={"public_scores": scores}, gettext=trans.gettext))
    registered = sections.REGISTRY["public-scores"]
    entry = sections.entry(registered, dict(context, appendix_title=trans.gettext(registered.appendix_title)),
                           trans.gettext)
    # the sentences in the section, the table in its appendix
    html = " ".join(" ".join(env.get_template(t).render(section=entry, sep="") for t in (
        entry["body"], registered.appendix)).split())
    v6e = scores[(scores.generation == "v6e")]
    error = 100 * (math.exp(v6e.log_ratio.abs().median()) - 1)
    bias = 100 * (math.exp(v6e.log_ratio.median()) - 1)
    assert f"{error:.1f}" in html and f"{bias:+.1f}" in html and "67" in html  # 2 of 3 inside
    words = {"en": ["5 rows from 1 sources", "4 of them are plain matmuls", "On v6e, 3 public measurements",
                    "On v5e, 1 public measurement: error", "unaligned"],
             "zh": ["共 5 行，来自 1 个来源", "其中 4 行", "在 v6e 上，3 条公开测量", "未对齐", "方阵"]}[lang]
    for w in words:
        assert w in html, w
    assert "7x" not in html  # no modelled row there
    empty = scores.assign(model_seconds=np.nan)
    assert section.context(SimpleNamespace(tables={"public_scores": empty}, gettext=trans.gettext)) is None
