"""Prediction intervals of the timing model and XLA's monotone envelope, on the synthetic table of
tests/test_timing_model.py (published numbers made by the model from known constants, with noise)."""
import numpy as np
import pandas as pd
import pytest
from test_timing_model import synthetic_model, synthetic_table

from tpu_matmul_repro.analysis import claims, intervals, model_columns, validation
from tpu_matmul_repro.analysis import timing_model as tm
from tpu_matmul_repro.analysis.fitted_model import FittedModel, fit_model
from tpu_matmul_repro.experiments.core.schema import INTERVAL_COLUMNS

# the module's fitted table (noisy) made once: every test of this file on one worker
pytestmark = pytest.mark.xdist_group("intervals")


@pytest.fixture(scope="module")
def noisy():
    return synthetic_table(noise=0.1, seed=3)


@pytest.fixture(scope="module")
def fits(noisy):
    return synthetic_model(noise=0.1, seed=3)


def test_intervals_bracket_every_modelled_number(noisy):
    rows = noisy[noisy.model_device_seconds.notna()]
    assert len(rows) and set(INTERVAL_COLUMNS) <= set(noisy.columns)
    for col in ("model_device_seconds", "model_post_seconds", "model_device_tflops", "model_post_tflops"):
        lo95, lo80, hi80, hi95 = (rows[f"{col}_{s}"] for s in ("lo95", "lo80", "hi80", "hi95"))
        assert (lo95 <= lo80).all() and (lo80 <= rows[col]).all() and (rows[col] <= hi80).all()
        assert (lo80 < hi80).all()
        assert (hi80 <= hi95).all()
    assert rows.model_interval.str.contains("split conformal").all()
    # rows without modelled times get no band
    assert noisy.loc[noisy.model_device_seconds.isna(), INTERVAL_COLUMNS].isna().all().all()


@pytest.fixture(scope="module")
def with_v6e(noisy):
    """noisy with its estimates copied to v6e (its peaks): a generation no measurement checks, modelled."""
    from tpu_matmul_repro.experiments.core.chips import chip

    v6e = noisy[noisy.source == "estimate"].assign(target="v6e", device_kind="TPU v6 lite")
    v6e["peak_tflops"] = v6e.dtype.map(lambda d: chip("v6e").peak_flops[d] / 1e12)
    return model_columns.apply(pd.concat([noisy, v6e], ignore_index=True))[0]


def test_off_v5e_the_band_is_v5es_and_says_nothing_checks_it(with_v6e):
    table = with_v6e
    on = ["experiment", "kernel", "dtype", "m", "bm", "bk", "bn"]
    ok = table[table.model_device_seconds.notna() & (table.source == "estimate")]
    width = np.log(ok.model_post_seconds_hi80 / ok.model_post_seconds)
    both = ok.assign(width=width).pivot_table(index=on, columns="target", values="width")
    assert (both.v6e >= both.v5e - 1e-12).all()
    mine = ok[ok.target == "v6e"].model_interval
    assert mine.str.contains("no measurement on v6e checks it").all()
    assert not ok[ok.target == "v5e"].model_interval.str.contains("no measurement").any()


def test_conformal_quantile_is_the_ceil_n_plus_one_rank():
    errors = np.arange(1, 11) / 10  # 0.1 ... 1.0
    assert intervals.conformal_quantile(errors, 0.8) == pytest.approx(0.9)  # ceil(11 * 0.8) = 9th
    assert intervals.conformal_quantile(errors, 0.95) == np.inf  # ceil(11 * 0.95) = 11 > 10


def test_coverage_counts_held_out_points_only():
    """Figure a's errors are large: sized by the other figures alone its band misses every one of its
    points; had its own errors sized the band, it would cover them (rank 21 of 25 is 1.0)."""
    folds = [f for f in "abcde" for _ in range(5)]
    errors = pd.DataFrame({"error": [1.0 if f == "a" else 0.1 for f in folds], "fold": folds})
    inside = intervals.coverage(errors, 0.8)
    assert not inside[errors.fold == "a"].any()
    assert inside[errors.fold != "a"].all()
    assert intervals.conformal_quantile(errors.error, 0.8) == 1.0  # in-sample it would have covered a


def test_nested_coverage_uses_the_band_sized_without_the_figure():
    """Given the bands sized without each figure, a figure's points are checked against its own
    nested band, not against the other figures' errors (which would cover all of them here)."""
    folds = [f for f in "abcde" for _ in range(5)]
    errors = pd.DataFrame({"error": [0.5] * 25, "fold": folds, "band": "below 4096"})
    nested = {f: {0.8: {"below 4096": 1.0 if f == "a" else 0.1}} for f in "abcde"}
    inside = intervals.coverage(errors, 0.8, nested)
    assert inside[errors.fold == "a"].all() and not inside[errors.fold != "a"].any()
    assert intervals.coverage(errors, 0.8).all()  # the other figures' errors alone: every point inside


@pytest.mark.slow
def test_nested_bands_are_sized_by_fits_that_never_saw_the_figure(noisy):
    """Every fit behind a figure's nested band leaves out that figure and one more."""
    points, _ = tm.reference_points(noisy)
    seen = []

    def fit(p):
        seen.append(set(p.experiment))
        return tm.fit_published(p)

    nested = validation.nested_halfwidths(points, fit)
    figures = set(points.experiment)
    assert set(nested) == figures
    assert seen and all(len(figures - s) >= 2 for s in seen)
    for widths in nested.values():
        assert set(widths) == set(validation.LEVELS)
        assert all(widths[0.95][b] >= widths[0.8][b] for b in widths[0.8])


@pytest.mark.slow
def test_fidelity_table_checks_coverage_on_the_held_out_validation(noisy, fits):
    table = validation.fidelity_table(noisy, fits)
    loeo = table[table.validation == "leave one experiment out"]
    assert loeo.coverage80.between(0, 1).all() and loeo.coverage95.between(0, 1).all()
    assert (loeo.halfwidth95 >= loeo.halfwidth80).all()
    others = table[table.validation != "leave one experiment out"]
    assert others[["coverage80", "coverage95"]].isna().all().all()
    points, _ = tm.reference_points(noisy)
    checks = validation.interval_checks(points, validation.cross_validate(points, "experiment")
                                        .model_post_seconds)
    overall = loeo[(loeo.scope == "all")].iloc[0]
    assert overall.coverage80 == pytest.approx(checks.coverage80.mean())


def with_xla_dip(df, size=8192, dtype="float32", factor=0.6):
    """`df` with libtpu's XLA estimate at `size` made `factor` times as fast as it was (a dip)."""
    df = df.copy()
    dip = (df.source == "estimate") & (df.kernel == "xla") & (df.dtype == dtype) & (df.m == size)
    df.loc[dip, "tflops"] *= factor
    df.loc[dip, "seconds"] /= factor
    df.loc[dip, "est_cycles"] = (df.loc[dip, "est_cycles"] / factor).round().astype("Int64")
    return df, dip


@pytest.mark.slow
def test_a_flagged_xla_dip_never_reaches_a_modelled_column(noisy):
    df, dip = with_xla_dip(noisy)
    table, _ = model_columns.apply(df)
    assert table.estimate_nonmonotonic[dip].all()
    assert (table.xla_estimate_method[dip] == tm.MONOTONE_ENVELOPE).all()
    others = (table.source == "estimate") & (table.kernel == "xla") & (table.status == "ok") & ~dip
    assert (table.xla_estimate_method[others] == tm.COST_MODEL).all()
    assert (table.est_cycles[dip] == df.est_cycles[dip]).all()  # the raw estimate keeps its column
    xla = table[(table.source == "estimate") & (table.kernel == "xla") & (table.dtype == "float32")]
    rate = xla.drop_duplicates("m").set_index("m")
    for col in ("model_device_tflops", "model_post_tflops"):
        assert rate.loc[8192, col] >= rate.loc[4096, col]  # never slower per FLOP than a smaller size
    # and the fidelity points score the envelope, not the dip
    points, _ = tm.reference_points(table)
    flagged = points[~points.in_fit]
    assert len(flagged) and flagged.model_cycles.notna().all()
    assert (flagged.model_cycles < flagged.est_cycles).all()


def test_the_envelope_follows_aspect_for_non_square_problems():
    rows = [dict(source="estimate", target="v5e", kernel="xla", dtype="bfloat16", status="ok",
                 m=m, k=k, n=n, tflops=t)
            for m, k, n, t in [(1024, 512, 2048, 100.0), (2048, 1024, 4096, 150.0), (4096, 2048, 8192, 120.0),
                               (4096, 4096, 4096, 90.0)]]  # the last: another aspect, slower but no dip
    df = pd.DataFrame(rows)
    assert tm.flag_nonmonotonic(df).tolist() == [False, False, True, False]
    assert tm.best_smaller_rate(df).tolist()[2] == 150.0


@pytest.mark.slow
def test_a_claim_whose_difference_lies_inside_the_interval_is_inconclusive(noisy, fits, monkeypatch):
    """The issue's v4 case: (1024, 1024, 1024) 81.2 against (512, 512, 512) 75.1 TFLOP/s, an 8 % gap,
    inside an interval of x/1.16: inconclusive, not "differs"; the same gap outside x/1.02 differs."""
    speeds = {(1024, 1024, 1024): 81.2, (512, 512, 512): 75.1, (512, 1024, 1024): 70.0,
              (256, 256, 256): 50.0, (128, 128, 128): 10.0}
    post = {(1024, 1024, 1024): 90.3, (512, 512, 512): 92.7, (512, 1024, 1024): 71.6, (256, 256, 256): 40.6,
            (128, 128, 128): 10.3}

    def fake(self, experiment, dtype, kernel, size, blocks=None, *, measured):
        return speeds.get(blocks) if experiment == "v4" else 100.0

    monkeypatch.setattr(claims.Evidence, "get", fake)
    monkeypatch.setattr(claims, "_published", lambda df, experiment, dtype, kernel, size, blocks=None:
                        post.get(blocks) if experiment == "v4" else 100.0)
    for band, verdict in ((np.log(1.16), "inconclusive"), (np.log(1.02), "differs")):
        monkeypatch.setattr(claims.Evidence, "halfwidth", lambda self, size, b=band: b)
        row = claims.claims_table(noisy, fits, only=["v4_best_512"]).iloc[0]
        assert row.verdict == verdict, row.reason
        note = "inconclusive_band" if verdict == "inconclusive" else "differs_band"
        assert row.note_id.split()[0] == note
        # the VMEM limit each compared configuration was compiled at is in the reason
        assert "(512, 512, 512) 16 MiB" in row.reason and "(1024, 1024, 1024) 16 MiB" in row.reason
        assert f"80 % band (x/{np.exp(band):.2f})" in row.reason


def test_bands_are_conditioned_on_size():
    """Errors ten times larger at 8192: the 8192 band is sized by them, the small sizes' stay narrow,
    and held-out coverage is checked band by band."""
    rng = np.random.default_rng(0)
    folds = np.repeat(list("abcde"), 12)
    m = np.tile([1024, 2048, 8192], 20)
    errors = pd.DataFrame({"error": np.abs(rng.normal(size=60)) * np.where(m == 8192, 0.2, 0.02),
                           "fold": folds, "band": validation.size_band(*(pd.Series(m),) * 3)})
    widths = validation.conditional_halfwidths(errors, 0.8)
    assert widths["8192 and above"] > 5 * widths["below 4096"]
    inside = intervals.coverage(errors, 0.8)
    large = errors.band == "8192 and above"
    pooled = intervals.coverage(errors.drop(columns="band"), 0.8)
    assert 0.6 <= inside[large].mean() <= 1.0 and 0.6 <= inside[~large].mean() <= 1.0
    assert pooled[large].mean() < inside[large].mean()  # one band for all misses the large sizes


def test_the_band_written_with_the_fits_is_the_one_sized(noisy, fits, tmp_path):
    """The band read back from timing_model.json is the one the run sized, and the one fidelity.csv
    checks, size band by size band."""
    fits.write(tmp_path / "timing_model.json")
    back = FittedModel.read(tmp_path / "timing_model.json")
    b = fits.band
    assert back.band == b and back.fits == fits.fits and back.size_refits == fits.size_refits
    table = validation.fidelity_table(noisy, back)
    rows = table[(table.validation == intervals.VALIDATION) & (table.scope == "size band")].set_index("group")
    for name, widths in b.by_size.items():
        assert rows.loc[name, "halfwidth80"] == pytest.approx(widths[0.8])
    assert b.for_size(8192, 8192, 8192) == b.by_size["8192 and above"]
    assert b.for_size(1024, 1024, 1024) == b.by_size["below 4096"]


def test_a_size_band_without_points_takes_the_widest_band(noisy):
    """One rule for an empty size band: the band gives it the widest band's half-width
    (validation.band_scales), and fidelity.csv writes that width (not NaN) beside n = 0."""
    no_4096 = noisy[~((noisy.source == "published") & (noisy.m == 4096))]
    model = fit_model(no_4096)
    sized = model.band
    table = validation.fidelity_table(no_4096, model)
    rows = table[(table.validation == intervals.VALIDATION) & (table.scope == "size band")].set_index("group")
    empty = rows.loc["4096 to 8191"]
    assert empty.n == 0 and np.isnan(empty.coverage80)
    for level in intervals.LEVELS:
        column = f"halfwidth{intervals.suffix(level)}"
        widest = max(rows[column])
        assert sized.by_size["4096 to 8191"][level] == pytest.approx(widest) == pytest.approx(empty[column])
        assert sized.halfwidth[level] == pytest.approx(widest)


@pytest.mark.slow
def test_off_v5e_the_band_covers_the_refits_predictions(with_v6e, fits):
    table = with_v6e
    rows = table[(table.target == "v6e") & table.model_device_seconds.notna()]
    refits = list(fits.refits().values())  # v6e's rows add no published point: the same refits
    assert len(refits) == 5
    for r in rows.head(12).itertuples():
        for fit in refits:
            t = tm.device_seconds(tm.features(r), fit.constants)
            assert r.model_device_seconds_lo80 * (1 - 1e-9) <= t <= r.model_device_seconds_hi80 * (1 + 1e-9)
