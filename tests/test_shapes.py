"""Arbitrary (m, k, n) problems: config `shapes` for blocked kernels and XLA, every check naming the
value, the traffic count and the timing model on non-square shapes, and (compiler) a non-square
problem through the compile study."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from test_timing_model import TRUE, VERSIONS, estimate_row, published_row, synthetic_table

from tpu_matmul_repro.analysis import model_columns
from tpu_matmul_repro.analysis import timing_model as tm
from tpu_matmul_repro.analysis.aggregate import combine
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.schema import frame as to_frame
from tpu_matmul_repro.experiments.core.traffic import hbm_bytes
from tpu_matmul_repro.experiments.plan import config as experiment_config
from tpu_matmul_repro.experiments.plan import job_lists

ROOT = Path(__file__).resolve().parent.parent
LAYER = (1024, 512, 2048)


@pytest.fixture
def config():
    loaded = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    loaded["compile_study"]["experiments"]["layers"] = {
        "kernel": "v5", "dtypes": ["bfloat16"], "blocks": [[256, 256, 512], [512, 512, 1024]],
        "shapes": [list(LAYER)]}
    return loaded


def test_shapes_compile_for_blocked_kernels_and_xla(config):
    jobs = job_lists.compile_jobs(experiment_config.checked(config))
    layers = jobs[("v5e", "layers", "bfloat16")].cases
    assert {(c.m, c.k, c.n) for c in layers} == {LAYER}  # shapes and no sizes: the shapes only
    assert {(c.bm, c.bk, c.bn) for c in layers} == {(256, 256, 512), (512, 512, 1024)}
    xla = [c for c in jobs[("v5e", "xla", "bfloat16")].cases if (c.m, c.k, c.n) == LAYER]
    assert len(xla) == 1
    squares = [c.m for c in jobs[("v5e", "xla", "bfloat16")].cases if c.m == c.k == c.n]
    assert squares == sorted(squares)  # the baseline keeps the post's order first


@pytest.mark.parametrize("spec, message", [
    ({"shapes": [[1024, 1000, 2048]]}, r"layers\.shapes\[0\]: k=1000 of shape \[1024, 1000, 2048\] is not a "
                                       r"multiple of 128"),
    ({"shapes": [[1024, 512, 1920]]}, r"layers\.blocks: bn=512 does not divide n=1920"),
    ({"kernel": "v2", "splits": [2]}, r"layers\.shapes: only for blocked kernels"),
    ({"shapes": [[1024, 512]]}, r"layers\.shapes\[0\]: \[1024, 512\] is too short"),
])
def test_bad_shapes_name_the_value(config, spec, message):
    config["compile_study"]["experiments"]["layers"].update(spec)
    with pytest.raises(experiment_config.ConfigError, match=message):
        job_lists.compile_jobs(experiment_config.checked(config))


def test_blocked_traffic_of_a_non_square_problem_has_its_closed_form():
    # m/bm = 4, n/bn = 7, k/bk = 8: A is read once per output column block, B once per row block
    m, k, n, bm, bk, bn = 1024, 4096, 14336, 256, 512, 2048
    expected = 2 * (m * k * (n // bn) + k * n * (m // bm) + m * n)
    assert hbm_bytes(Case("v5", "bfloat16", m, k, n, bm, bk, bn)) == expected


@pytest.mark.slow
def test_the_fit_recovers_known_constants_from_non_square_problems():
    """The synthetic table's published numbers plus non-square ones, all made from TRUE: the fit
    recovers TRUE, and the non-square estimates are modelled."""
    est, pub = [], []
    for shape in [(1024, 512, 2048), (2048, 4096, 1024), (4096, 1024, 7168), (8192, 4096, 14336)]:
        for blocks in [(256, 256, 512), (512, 512, 1024), (512, 1024, 1024)]:
            case = Case("v5", "bfloat16", *shape, *blocks)
            if any(b > d for b, d in zip(blocks, (case.m, case.k, case.n), strict=True)):
                continue
            est.append(estimate_row("layers", case))
            pub.append(published_row("layers", case, tm.post_seconds(tm.features(pd.Series(est[-1])), TRUE)))
    base = synthetic_table()
    extra = combine([to_frame(est, VERSIONS)], to_frame(pub, {}).drop(columns=list(VERSIONS)))
    df, _ = model_columns.apply(pd.concat([base, extra], ignore_index=True))
    points, _ = tm.reference_points(df)
    assert (points.experiment == "layers").sum() == 11
    fit = tm.fit_published(points)
    for name in tm.PARAMS:
        assert getattr(fit.constants, name) == pytest.approx(getattr(TRUE, name), rel=0.02), name
    layers = df[(df.source == "estimate") & (df.experiment == "layers")]
    assert layers.model_post_seconds.notna().all()
    assert np.allclose(layers.model_post_seconds, layers.model_device_seconds + fit.constants.call_seconds,
                       rtol=1e-6)


@pytest.mark.compiler
def test_a_non_square_problem_through_the_compile_study():
    from tpu_matmul_repro.experiments.compile_study.study import run_job
    from tpu_matmul_repro.experiments.core.jobs import Job

    cases = (Case("v5", "bfloat16", 2048, 1024, 4096, 512, 512, 1024),
             Case("xla", "bfloat16", 2048, 1024, 4096))
    # a grid of 4 x 2 x 4 steps: profiled whole
    df = run_job(Job("v5e", "layers", cases, timeout_s=300, profile_max_steps=32, static_profile=True))
    assert (df.status == "ok").all(), df.error.tolist()
    pallas = df[df.kernel == "v5"].iloc[0]
    assert pallas.vmem_method == "compiled" and pallas.cycles_method == "profiled"
    assert pallas.hbm_bytes == hbm_bytes(cases[0]) and pallas.est_cycles > 0
    assert df[df.kernel == "xla"].iloc[0].est_cycles > 0
