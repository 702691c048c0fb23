"""The timing model on a synthetic table whose published numbers the model itself made from known
constants: the fit recovers them, cross-validation never scores a point in its own fit, too few points
is a clear error, the claims table, a TPU run's re-fit, and the post's plots drawing the post-method
column."""
import dataclasses
import functools
import re

import numpy as np
import pandas as pd
import pytest

from tpu_matmul_repro.analysis import claims, model_columns, validation
from tpu_matmul_repro.analysis import timing_model as tm
from tpu_matmul_repro.analysis.aggregate import combine
from tpu_matmul_repro.analysis.fitted_model import constants_table, fit_model, without
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.chips import chip
from tpu_matmul_repro.experiments.core.schema import frame as to_frame
from tpu_matmul_repro.experiments.core.traffic import hbm_bytes
from tpu_matmul_repro.experiments.core.units import MiB, flops

VERSIONS = {"jax_version": "0.10.2", "libtpu_version": "0.0.42.1", "git_sha": "abc"}
TRUE = tm.Constants(dma_cycles=75.0, call_seconds=1e-4,
                    float32_cycles_per_kib=2.0, overlapped_step_cycles=120.0)
V5E = chip("v5e")
CONFIGS = (  # (experiment, kernel, dtype, blocks, sizes)
    [("v1", "v1", "float32", None, (512, 1024))]
    + [("v2", "v2", "float32", "split4", (512, 1024, 2048))]
    + [("v3", "v3", "float32", (128, 128, 128), (512, 1024, 2048, 8192))]
    + [("v4", "v3", "float32", b, (1024, 2048, 4096, 8192))
       for b in [(256, 256, 256), (512, 512, 512), (512, 1024, 1024), (1024, 1024, 1024)]]
    + [("v5", "v5", "bfloat16", b, (1024, 2048, 4096, 8192))
       for b in [(256, 256, 256), (512, 512, 512), (512, 1024, 1024), (1024, 1024, 1024)]]
)
XLA = [("float32", s) for s in (1024, 2048, 4096, 8192)] + [("bfloat16", s) for s in (1024, 2048, 4096, 8192)]


def profile_cycles(case: Case) -> int:
    """A made-up static profile: MXU cycles of each step times 1.1 plus 600 cycles per step."""
    if not case.facts.pallas:  # XLA's cost model; at HIGHEST (xla_highest) about six bfloat16 passes
        passes = 6.3 if case.kernel == "xla_highest" else 1.05
        return int(flops(case.m, case.k, case.n) / V5E.peak_flops[case.dtype] * V5E.clock_hz * passes)
    steps = int(np.prod(case.grid())) if case.grid() else 1
    mxu = flops(case.m, case.k, case.n) / steps / V5E.peak_flops[case.dtype] * V5E.clock_hz
    return int(steps * (1.1 * mxu + 600))


def cases():
    for experiment, kernel, dtype, blocks, sizes in CONFIGS:
        for s in sizes:
            if blocks is None:
                yield experiment, Case(kernel, dtype, s, s, s)
            elif blocks == "split4":
                yield experiment, Case(kernel, dtype, s, s, s, s // 4, s, s // 4)
            elif s >= max(blocks):
                yield experiment, Case(kernel, dtype, s, s, s, *blocks)
    for dtype, s in XLA:
        yield "xla", Case("xla", dtype, s, s, s)


def estimate_row(experiment, case, status="ok"):
    cycles = profile_cycles(case)
    return dict(source="estimate", target="v5e", device_kind="TPU v5 lite", experiment=experiment,
                kernel=case.kernel, dtype=case.dtype, m=case.m, k=case.k, n=case.n, bm=case.bm, bk=case.bk,
                bn=case.bn, status=status, est_cycles=cycles if status == "ok" else None,
                hbm_bytes=hbm_bytes(case), seconds=cycles / V5E.clock_hz,
                tflops=(flops(case.m, case.k, case.n) * V5E.clock_hz / cycles / 1e12) if status == "ok"
                else None,
                vmem_limit_bytes=16 * MiB, raised_limit=False, search=False, error="",
                cycles_method="profiled",
                peak_tflops=197.0, hbm_bytes_per_s=V5E.hbm_bytes_per_s)


def published_row(experiment, case, seconds=None, status="ok"):
    return dict(source="published", target="v5e", device_kind="TPU v5 lite", experiment=experiment,
                kernel=case.kernel, dtype=case.dtype, m=case.m, k=case.k, n=case.n, bm=case.bm, bk=case.bk,
                bn=case.bn, status=status, raised_limit=False, search=False,
                tflops=flops(case.m, case.k, case.n) / seconds / 1e12 if status == "ok" else None)


def synthetic_table(noise=0.0, seed=0, highest=()):
    """Estimates of every case; published numbers = the model with TRUE constants (times log-normal noise).

    XLA's baseline is published in figures v4 and v5 (its own dtype's); v1 fails from 2048 and the
    1024-blocks in bfloat16 from 2048, both in the post and in this "run". `highest`: sizes at which
    XLA's float32 matmul is also compiled at precision=HIGHEST (never published). Each caller gets its
    own copy, to change as it likes.
    """
    return _synthetic(noise, seed, tuple(highest))[0].copy()


def synthetic_model(noise=0.0, seed=0, highest=()):
    """The fits behind synthetic_table's model columns (fit_model of that table: a test checks)."""
    return _synthetic(noise, seed, tuple(highest))[1]


@functools.cache
def _synthetic(noise, seed, highest):
    """synthetic_table's table and fits, made once per test process for each argument: the same seed
    gives the same table, and its model columns (a fit and its refits) take a second or two, which a
    dozen tests in several files would otherwise pay again."""
    rng = np.random.default_rng(seed)
    est = [estimate_row("xla", Case("xla_highest", "float32", s, s, s)) for s in highest]
    pub = []
    for experiment, case in cases():
        fails = (case.kernel == "v5" and case.bm == 1024 and case.m >= 2048)
        est.append(estimate_row(experiment, case, "vmem_oom" if fails else "ok"))
        if fails:
            pub.append(published_row(experiment, case, status="failed"))
            continue
        t = tm.post_seconds(tm.features(pd.Series(est[-1])), TRUE) * np.exp(noise * rng.normal())
        figures = ["v4"] if case.dtype == "float32" else ["v5"]
        for figure in (figures if case.kernel == "xla" else [experiment]):
            pub.append(published_row(figure, case, t))
    for s in (2048, 4096):
        case = Case("v1", "float32", s, s, s)
        est.append(estimate_row("v1", case, "vmem_oom"))
        pub.append(published_row("v1", case, status="failed"))
    estimates = to_frame(est, VERSIONS)
    published = to_frame(pub, {}).drop(columns=list(VERSIONS))
    df = combine([estimates], published)
    return model_columns.apply(df)


# the module's fitted table (synthetic) made once: every test of this file on one worker
pytestmark = pytest.mark.xdist_group("timing_model")


@pytest.fixture(scope="module")
def synthetic():
    return synthetic_table()


def test_the_synthetic_model_is_the_fit_of_its_table():
    """Tests take synthetic_model for fit_model(synthetic_table(...)): the same fits, to the bit."""
    assert synthetic_model(noise=0.1, seed=3) == fit_model(synthetic_table(noise=0.1, seed=3))


@pytest.mark.slow
def test_fit_recovers_known_constants(synthetic):
    points, left_out = tm.reference_points(synthetic)
    assert left_out == {"published run failed": 5}
    fit = tm.fit_published(points)
    for name in tm.PARAMS:
        assert getattr(fit.constants, name) == pytest.approx(getattr(TRUE, name), rel=0.02), name
    assert fit.rms_log_error < 1e-3


def test_fit_with_noise_stays_within_its_uncertainty():
    points, _ = tm.reference_points(synthetic_table(noise=0.03, seed=1))
    fit = tm.fit_published(points)
    for name in tm.PARAMS:
        value, error = getattr(fit.constants, name), getattr(fit.std_errors, name)
        assert 0 < error < abs(value)
        assert abs(value - getattr(TRUE, name)) < 4 * error, name


def test_modelled_times_respect_peak_and_bandwidth(synthetic):
    est = synthetic[(synthetic.source == "estimate") & synthetic.model_device_seconds.notna()]
    work = flops(est.m.astype(float), est.k.astype(float), est.n.astype(float))
    assert (est.model_device_seconds >= work / 197e12 * (1 - 1e-9)).all()
    assert (est.model_device_seconds >= est.hbm_bytes.astype(float) / V5E.hbm_bytes_per_s * (1 - 1e-9)).all()
    assert (est.model_post_seconds > est.model_device_seconds).all()
    # each figure's rows come from the refit without that figure: out of sample, like its points
    assert (est.model_fit == "published v5e without " + est.experiment).all()


@pytest.mark.slow
def test_cross_validation_never_scores_a_point_in_its_own_fit(synthetic, monkeypatch):
    points, _ = tm.reference_points(synthetic)
    seen = []
    real_fit = tm.fit_published

    def spy(train):
        seen.append(set(train.index))
        return real_fit(train)

    for column in validation.SCHEMES.values():
        seen.clear()
        predicted = validation.cross_validate(points, column, fit=spy)
        assert sorted(predicted.index) == sorted(points.index)  # every point scored once
        order = [str(value) for value, _, _ in validation.folds(points, column)]
        assert len(order) == len(seen) > 2
        for value, fold_train in zip(order, seen, strict=True):
            part = predicted[predicted.fold == value]
            assert len(part) and not fold_train & set(part.index)
            configs = {str(c) for c in points.loc[sorted(fold_train), tm.CONFIG].itertuples(index=False)}
            assert not configs & {str(c) for c in part[tm.CONFIG].itertuples(index=False)}
    # XLA's float32 baseline appears in figure v4 only here: leaving v4 out leaves XLA f32 out too
    folds = {str(v): (set(tr), set(te)) for v, tr, te in validation.folds(points, "experiment")}
    train, _ = folds["v4"]
    fitted = points.loc[sorted(train)]
    assert not ((fitted.kernel == "xla") & (fitted.dtype == "float32")).any()


@pytest.mark.slow
def test_fidelity_table_reports_cross_validated_errors(synthetic):
    table = validation.fidelity_table(synthetic, fit_model(synthetic))
    overall = table[(table.scope == "all")].set_index(["estimator", "validation"]).median_abs_log_ratio
    assert overall[("model", "in-sample (fitted on every point)")] < 1e-3
    assert overall[("model", "leave one size out")] < 0.05  # noise-free: held-out points are predicted too
    assert overall[("compiler", "none (libtpu's estimate)")] > 0.1
    assert (table.n_left_out == 5).all() and table.left_out.str.contains("published run failed: 5").all()
    assert set(table[table.scope == "experiment"].group) == {"v1", "v2", "v3", "v4", "v5"}


def test_too_few_points_is_a_clear_error(synthetic):
    points, _ = tm.reference_points(synthetic)
    with pytest.raises(tm.TooFewPoints, match="5 points cannot fit 4 constants"):
        tm.fit_published(points.head(5))
    # v1, v2, v3 published: 9 points fit, but leaving v1's 2 out leaves 7 (6 constants need 8)
    few = synthetic[~((synthetic.source == "published") & ~synthetic.experiment.isin(["v1", "v2", "v3"]))]
    with pytest.raises(tm.TooFewPoints, match="fold experiment=v3: 5 points cannot fit"):
        validation.cross_validate(tm.reference_points(few)[0], "experiment")
    # the fidelity table still reports what it can, and says which validation could not be made, and why
    table = validation.fidelity_table(few, fit_model(few))
    loeo = table[table.validation == "leave one experiment out"]
    assert (loeo.n == 0).all() and loeo.note.str.contains("fold experiment=v3: 5 points cannot fit").all()
    assert (table[table.estimator == "compiler"].n > 0).any()
    only_v1 = synthetic[~((synthetic.source == "published") & (synthetic.experiment != "v1"))]
    with pytest.raises(tm.TooFewPoints, match="points cannot fit 4 constants"):
        validation.fidelity_table(only_v1, fit_model(only_v1))


def test_xla_estimate_that_falls_with_size_is_flagged(synthetic):
    df = synthetic.copy()
    dip = (df.source == "estimate") & (df.kernel == "xla") & (df.dtype == "float32") & (df.m == 8192)
    df.loc[dip, "tflops"] = df.loc[dip, "tflops"] * 0.6
    flags = tm.flag_nonmonotonic(df)
    assert flags[dip].all() and not flags[~dip].any()
    points, left_out = tm.reference_points(df)
    assert left_out["scored, not fitted: XLA estimate flagged non-monotonic"] == 1
    assert not points[points.in_fit.eq(False)].empty and points.in_fit.sum() == len(points) - 1
    df["estimate_nonmonotonic"] = flags
    from tpu_matmul_repro.analysis.summaries import best_vs_xla
    best = best_vs_xla(df).set_index(["dtype", "size", "estimator"])
    assert best.loc[("float32", 8192, "compiler")].xla_flagged
    assert np.isnan(best.loc[("float32", 8192, "compiler")].fraction_of_xla)
    assert np.isnan(best.loc[("float32", 8192, "model")].fraction_of_xla)
    row = best.loc[("float32", 4096, "model")]
    assert not row.xla_flagged
    # both sides from the same estimator, and the post-method time against the post's measured XLA
    assert row.fraction_of_xla == pytest.approx(row.best_tflops / row.xla_tflops)
    assert row.fraction_of_post_xla == pytest.approx(row.best_post_method_tflops / row.post_xla_tflops)
    compiler = best.loc[("float32", 4096, "compiler")]
    assert compiler.fraction_of_xla == pytest.approx(compiler.best_tflops / compiler.xla_tflops)
    assert np.isnan(compiler.fraction_of_post_xla)  # a device-time estimate is not compared with wall time


@pytest.mark.slow
def test_claims_table_from_a_fixture(synthetic):
    table = claims.claims_table(synthetic, fit_model(synthetic)).set_index("claim_id")
    assert list(table.index) == list(claims.registry())
    assert set(table.verdict) <= set(claims.VERDICTS)
    assert (table.toolchain == "current").all()
    v1 = table.loc["v1_fails_above_1024"]
    assert v1.verdict == "holds" and v1.this_value == "ok up to 1024, fails from 2048"
    assert table.loc["v5_1024_fails_from_2048"].verdict == "holds"
    # v3's 128-blocks at 8192: an out-of-sample prediction against the claimed 10 TFLOP/s
    v3 = table.loc["v3_128_about_10"]
    assert v3.verdict in claims.VERDICTS[:3] and v3.source_kind == "model"
    assert "leave one experiment out" in table.loc["v4_best_512"].source
    assert table.loc["bf16_beats_f32"].verdict in ("holds", "differs")
    # without published rows for v2 the claim cannot be tested
    no_v2 = synthetic[~((synthetic.experiment == "v2") & (synthetic.source == "published"))]
    checked = claims.claims_table(no_v2, fit_model(no_v2)).set_index("claim_id")
    assert checked.loc["v2_up_to_2048"].verdict == "not tested"


def blocks_of(row) -> dict:
    return {b: None if pd.isna(v) else int(v) for b, v in (("bm", row.bm), ("bk", row.bk), ("bn", row.bn))}


def test_measured_run_refits_its_own_constants(synthetic):
    """A TPU run: device time from the model with other constants, wall = device + 150 us."""
    own = tm.Constants(dma_cycles=40.0, call_seconds=1.5e-4, float32_cycles_per_kib=1.5,
                       overlapped_step_cycles=60.0)
    est = synthetic[(synthetic.source == "estimate") & (synthetic.status == "ok")].drop_duplicates(tm.CONFIG)
    rows = []
    for r in est.itertuples():
        device = tm.device_seconds(tm.features(r), own)
        rows.append(dict(source="measured", target="v5e", experiment=r.experiment, kernel=r.kernel,
                         dtype=r.dtype,
                         m=r.m, k=r.k, n=r.n, status="ok", seconds=device,
                         **blocks_of(r),
                         wall_seconds=device + own.call_seconds, run_label="vm1", vmem_limit_bytes=16 * MiB,
                         timestamp="2026-11-30T10:00:00+00:00", raised_limit=False, search=False))
    measured = to_frame(rows, VERSIONS)
    df = pd.concat([synthetic, measured], ignore_index=True)
    out, model = model_columns.apply(df)
    constants = constants_table(model)
    fit = constants[constants.fit == "measured v5e vm1"].set_index("constant").value
    for name in tm.PARAMS:
        assert fit[name] == pytest.approx(getattr(own, name), rel=0.02), name
    got = out[out.source == "measured"]
    assert (got.model_fit == "measured v5e vm1").all()
    assert np.allclose(got.measured_over_model, 1.0, rtol=0.02)
    assert np.allclose(got.wall_over_model, 1.0, rtol=0.02)


def test_the_posts_plots_draw_the_post_method_column(synthetic):
    import matplotlib.pyplot as plt

    from tpu_matmul_repro.figures import plots

    fig = plots.plot_experiment(synthetic, "v5", "bfloat16", "v5e", "en")
    dashed = [line for line in fig.axes[0].get_lines() if line.get_linestyle() == "--"]
    drawn = sorted(round(float(y), 6) for line in dashed for y in line.get_ydata())
    est = synthetic[(synthetic.source == "estimate") & (synthetic.experiment == "v5")
                    & (synthetic.status == "ok")]
    assert drawn == sorted(round(float(y), 6) for y in est.model_post_tflops)
    assert not np.allclose(sorted(drawn), sorted(est.tflops))  # not the raw compiler estimate
    legend = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert "modelled (timing model fitted to the post)" in legend and "measured" not in legend
    plt.close(fig)
    fig = plots.plot_generations(synthetic, "v5", "bfloat16", "en")  # device time elsewhere
    assert fig.axes[0].get_ylabel() == "TFLOP/s, modelled device time"
    plt.close(fig)


@pytest.mark.slow
def test_pallas_rows_need_no_compiler_cycles(synthetic):
    """The model's Pallas inputs are the compile's (VMEM verdict and request) and the BlockSpecs: rows
    without libtpu's cycles (no static profile) get the same modelled time as rows with them, on any
    target, never faster than the chip."""
    v4 = chip("v4")
    base = synthetic[synthetic.source == "estimate"].drop(
        columns=[c for c in synthetic if c.startswith("model_") or c.endswith("_over_model")]
        + ["estimate_nonmonotonic"])
    published = synthetic[synthetic.source == "published"].drop(
        columns=[c for c in synthetic if c.startswith("model_") or c.endswith("_over_model")]
        + ["estimate_nonmonotonic"])
    on_v4 = dict(target="v4", device_kind=v4.device_kind, peak_tflops=v4.peak_flops["bfloat16"] / 1e12,
                 hbm_bytes_per_s=v4.hbm_bytes_per_s)
    bare, with_cycles = base.assign(**on_v4), base.assign(**on_v4)
    bare.loc[bare.kernel != "xla", ["est_cycles", "seconds", "tflops"]] = np.nan
    a, _ = model_columns.apply(pd.concat([base, bare, published], ignore_index=True))
    b, _ = model_columns.apply(pd.concat([base, with_cycles, published], ignore_index=True))
    ok = (a.source == "estimate") & (a.status == "ok") & (a.target == "v4")
    assert ok.sum() and np.allclose(a[ok].model_device_seconds, b[ok].model_device_seconds)
    assert (a[ok].model_device_tflops <= a[ok].peak_tflops * 1.0001).all()
    assert (a[ok].model_fit == "published v5e").all()


@pytest.mark.slow
def test_only_each_targets_latest_run_is_fitted(synthetic):
    """An older run of the same target (its own constants) is not fitted: only the latest models the
    table, and a file of many runs must not cost a fit each."""
    older, latest = (tm.Constants(dma_cycles=s, call_seconds=1.5e-4, float32_cycles_per_kib=1.5,
                                  overlapped_step_cycles=60.0) for s in (75.0, 40.0))
    est = synthetic[(synthetic.source == "estimate") & (synthetic.status == "ok")].drop_duplicates(tm.CONFIG)
    rows = []
    for label, timestamp, k in (("old", "2026-01-01T00:00:00+00:00", older),
                                ("new", "2026-06-01T00:00:00+00:00", latest)):
        for r in est.itertuples():
            device = tm.device_seconds(tm.features(r), k)
            rows.append(dict(source="measured", target="v5e", experiment=r.experiment, kernel=r.kernel,
                             dtype=r.dtype, m=r.m, k=r.k, n=r.n, status="ok", seconds=device, **blocks_of(r),
                             wall_seconds=device + k.call_seconds, run_label=label, vmem_limit_bytes=16 * MiB,
                             timestamp=timestamp, raised_limit=False, search=False))
    df = pd.concat([synthetic, to_frame(rows, VERSIONS)], ignore_index=True)
    out, model = model_columns.apply(df)
    constants = constants_table(model)
    assert sorted(set(constants.fit) - {without(e) for e in "v1 v2 v3 v4 v5".split()}) == [
        "measured v5e new", "published v5e"]
    fit = constants[constants.fit == "measured v5e new"].set_index("constant").value
    assert fit["dma_cycles"] == pytest.approx(40.0, rel=0.02)
    assert (out[out.source == "measured"].model_fit == "measured v5e new").all()


def test_single_buffered_blocks_add_their_copies_to_the_step(synthetic):
    """The post's compiler gave the large float32 blocks one buffer each: the model reads it from the
    VMEM request, and those copies stop overlapping the dot."""
    row = synthetic[(synthetic.source == "estimate") & (synthetic.experiment == "v4") & (synthetic.m == 8192)
                    & (synthetic.bm == 1024)].iloc[0]
    case = tm.case_of(row)
    once = 3 * 1024 * 1024 * 4  # a, b and the output block, float32, one buffer each
    assert tm.single_buffered(case, once) == 1.0
    assert tm.single_buffered(case, 2 * once) == 0.0
    assert tm.single_buffered(case, 1.5 * once) == pytest.approx(0.5)
    assert tm.single_buffered(case, None) == 0.0  # no request known: the pipeline's double buffering
    double = tm.device_seconds(tm.features(row, vmem_bytes=2 * once), TRUE)
    single = tm.device_seconds(tm.features(row, vmem_bytes=once), TRUE)
    f = tm.features(row, vmem_bytes=once)
    copies = float(np.sum(f.window_counts * f.window_bytes)) / (TRUE.bandwidth_fraction * f.hbm_bytes_per_s)
    assert single > double
    assert single - double <= copies * (1 + 1e-9)  # at most every copy added once


def test_many_configurations_at_once_give_each_one_s_time_to_the_bit(synthetic):
    """A fit evaluates its points as one stack (padded windows); each point's time must be the one it
    gets alone, XLA and Pallas rows mixed, and a row with more distinct windows than numpy adds in
    order (8: pairwise from there)."""
    feats = [tm.features(r) for r in synthetic[synthetic.source == "estimate"].itertuples()]
    wide = dataclasses.replace(feats[-1], xla=False, window_bytes=np.geomspace(1e3, 1e8, 9),
                               window_counts=np.arange(1.0, 10.0), window_dmas=np.full(9, 2.0))
    feats = [*feats, wide]
    assert {f.xla for f in feats} == {True, False}
    k = dataclasses.replace(TRUE, dma_latency_cycles=37.0, mxu_fill_rows=3.0)
    together = tm.device_seconds_of(tm.Stack(feats), k)
    alone = [tm.device_seconds_of(tm.Stack([f]), k)[0] for f in feats]
    assert list(together) == alone
    rng = np.random.default_rng(0)  # the stack's sums are numpy's, to the bit, for any window count
    lengths = rng.integers(0, 13, 200)
    terms = np.zeros((200, 12))
    for i, n in enumerate(lengths):
        terms[i, :n] = rng.standard_normal(n) * 10.0 ** rng.uniform(-6, 6, n)
    assert list(tm._row_sums(terms, lengths)) == [np.sum(t[:n]) for t, n in zip(terms, lengths, strict=True)]


def test_the_posts_runs_are_modelled_with_the_posts_compilers_buffers(synthetic):
    """A compile of toolchain "post" gives post_vmem_bytes to today's row of the same configuration;
    the published point is modelled with it, today's row with its own request."""
    est = synthetic[(synthetic.source == "estimate") & (synthetic.experiment == "v4")
                    & (synthetic.bm == 1024)]
    post = est.assign(toolchain=tm.POST_TOOLCHAIN, vmem_bytes=3 * 1024 * 1024 * 4)
    today = est.assign(toolchain="current", vmem_bytes=6 * 1024 * 1024 * 4)
    df = pd.concat([synthetic.drop(index=est.index), today, post], ignore_index=True)
    assert (tm.post_vmem_bytes(df)[df.toolchain == "current"].dropna() == 3 * 1024 * 1024 * 4).any()
    from tpu_matmul_repro.analysis.toolchain_rows import primary_rows
    table = primary_rows(model_columns.apply(df, toolchain="current")[0], "current")
    points, _ = tm.reference_points(table)
    mine = points[(points.experiment == "v4") & (points.bm == 1024)]
    assert len(mine) and (mine.model_vmem_bytes == 3 * 1024 * 1024 * 4).all()
    assert all(tm.features(r).single_buffered == 1.0 for r in mine.itertuples())
    rows = table[(table.source == "estimate") & (table.experiment == "v4") & (table.bm == 1024)]
    assert all(tm.features(r).single_buffered == 0.0 for r in rows.itertuples())


# --- XLA at precision=HIGHEST: compiled, modelled from its own cycles, never fitted -----------------

HIGHEST_SIZES = (2048, 4096, 8192)


@pytest.fixture(scope="module")
def with_highest():
    return synthetic_table(highest=HIGHEST_SIZES)


def test_xla_highest_is_modelled_from_its_compile_and_never_fitted(synthetic, with_highest):
    """Its rows stay under experiment "xla" (no figure of the post holds them), enter no fit (the
    constants are those of the table without them), and their device time is XLA's form from their
    own cycles: max(FLOPs / peak, est_cycles / clock, bytes / bandwidth), no float32_factor."""
    rows = with_highest[with_highest.kernel == "xla_highest"]
    assert sorted(rows.m) == list(HIGHEST_SIZES) and set(rows.experiment) == {"xla"}
    assert set(rows.model_fit) == {"published v5e"} and not rows.estimate_nonmonotonic.any()
    assert (rows.xla_estimate_method == "cost_model").all()
    without = synthetic.drop(columns=[c for c in synthetic if c.startswith("model_")])
    same = with_highest[with_highest.kernel != "xla_highest"].reset_index(drop=True)
    assert same.model_device_seconds.to_numpy() == pytest.approx(
        synthetic.model_device_seconds.to_numpy(), nan_ok=True)
    assert len(without) == len(same)
    fit = fit_model(with_highest).published.constants
    for r in rows.itertuples():
        work = flops(r.m, r.k, r.n)
        expected = max(work / V5E.peak_flops["float32"], r.est_cycles / V5E.clock_hz,
                       hbm_bytes(Case("xla", "float32", r.m, r.k, r.n)) / (fit.bandwidth_fraction
                                                                         * V5E.hbm_bytes_per_s))
        assert r.model_device_seconds == pytest.approx(expected)
        assert r.est_cycles / V5E.clock_hz > 5 * work / V5E.peak_flops["float32"]  # its passes, compiled


def test_best_vs_xla_has_the_highest_column_and_never_counts_it_as_pallas(with_highest):
    from tpu_matmul_repro.analysis.summaries import best_vs_xla

    best = best_vs_xla(with_highest)
    assert not best.kernel.isin(["xla", "xla_highest"]).any()
    assert (best.pallas_precision == "DEFAULT").all() and (best.xla_precision == "DEFAULT").all()
    assert best[best.dtype == "bfloat16"].xla_highest_tflops.isna().all()
    table = with_highest[with_highest.kernel == "xla_highest"].set_index("m")
    for r in best[best.dtype == "float32"].itertuples():
        column = "model_device_tflops" if r.estimator == "model" else "tflops"
        assert r.xla_highest_tflops == pytest.approx(table.loc[r.size, column])
        assert r.fraction_of_xla_highest == pytest.approx(r.best_tflops / r.xla_highest_tflops)
        assert r.xla_highest_tflops < r.xla_tflops / 5  # HIGHEST: several passes, DEFAULT: one


@pytest.mark.slow
def test_the_reports_highest_row_prints_the_tables_numbers(with_highest):
    """The report's best-vs-XLA table: after each float32 row its like-for-like row against XLA at
    HIGHEST, with that row's numbers from the table, in both languages."""
    import html as entities

    from tpu_matmul_repro.analysis.summaries import best_vs_xla
    from tpu_matmul_repro.report import build, tables
    from tpu_matmul_repro.report.core_sections import one_estimator

    with_highest = with_highest.copy()  # the report states an out-of-VMEM row's request
    with_highest.loc[with_highest.status == "vmem_oom", "vmem_bytes"] = 19 * MiB
    best = best_vs_xla(with_highest)
    shown = tables.best_vs_xla_rows(one_estimator(best))
    highest = [r for r in shown if r["versus"] == "HIGHEST"]
    assert [r["size"] for r in highest] == list(HIGHEST_SIZES)
    table = with_highest[with_highest.kernel == "xla_highest"].set_index("m")
    for lang in ("en", "zh"):
        page = entities.unescape(build.render_html(
            with_highest, lang=lang, config_yaml="targets: [v5e]\n", targets=["v5e"], figure_names=set(),
            correctness={"passed": 1, "total": 1}, best_vs_xla=best))
        body = page[page.index('<section id="best">'):]
        body = body[:body.index("</section>")]
        for r in highest:  # every size in the appendix's table; the largest in the body's too
            xla = table.loc[r["size"]].model_device_tflops
            cells = rf"<td>{r['best_tflops']:.1f}</td><td>HIGHEST {xla:.1f}</td><td>([0-9.]+)"
            for where in (page, body) if r["size"] == max(HIGHEST_SIZES) else (page,):
                row = re.search(cells, where)
                assert row and float(row.group(1)) == round(r["best_tflops"] / xla, 2), (lang, r["size"])
