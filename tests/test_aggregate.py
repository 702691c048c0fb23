"""The tidy table and its summaries on small fixture tables."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tpu_matmul_repro.analysis.aggregate import (
    attach_baseline,
    check_unique,
    combine,
    load_published,
)
from tpu_matmul_repro.analysis.summaries import best_vs_xla
from tpu_matmul_repro.experiments.core.schema import KEY
from tpu_matmul_repro.experiments.core.schema import frame as to_frame

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = {"jax_version": "0.10.2", "libtpu_version": "0.0.42.1", "git_sha": "abc"}


def est(experiment, kernel, dtype, size, blocks=(None, None, None), status="ok", tflops=np.nan, target="v5e",
        limit=16 << 20, raised=False):
    bm, bk, bn = blocks
    return dict(source="estimate", target=target, experiment=experiment, kernel=kernel, dtype=dtype,
                m=size, k=size, n=size, bm=bm, bk=bk, bn=bn, status=status, tflops=tflops,
                vmem_limit_bytes=limit, raised_limit=raised, error="", cycles_method="")


@pytest.fixture
def estimates():
    rows = [
        est("v1", "v1", "float32", 1024, tflops=20.0),
        est("v1", "v1", "float32", 2048, status="vmem_oom"),
        est("v1", "v1", "float32", 2048, tflops=50.0, limit=64 << 20, raised=True),
        est("v5", "v5", "bfloat16", 2048, (512, 1024, 1024), tflops=80.0),
        est("v5", "v5", "bfloat16", 4096, (512, 1024, 1024), tflops=150.0),
        est("v5", "v5", "bfloat16", 4096, (256, 256, 256), tflops=60.0),
        est("xla", "xla", "float32", 1024, tflops=30.0),
        est("xla", "xla", "float32", 2048, tflops=90.0),
        est("xla", "xla", "bfloat16", 2048, tflops=100.0),
        est("xla", "xla", "bfloat16", 4096, tflops=160.0),
    ]
    return to_frame(rows, VERSIONS)


def test_baseline_joins_each_experiment_of_its_dtype(estimates):
    df = attach_baseline(estimates)
    assert "xla" not in set(df.experiment)
    assert sorted(df[(df.experiment == "v1") & (df.kernel == "xla")].m) == [1024, 2048]
    assert sorted(df[(df.experiment == "v5") & (df.kernel == "xla")].m) == [2048, 4096]


def test_combined_table_is_unique_sorted_and_carries_published(estimates):
    published = load_published(ROOT / "data" / "published_v5e.csv")
    df = combine([estimates], published)
    check_unique(df)
    assert list(df.source.unique()) == ["published", "estimate"]
    assert set(KEY) <= set(df.columns)
    # the post's "v4" rows ran v3's kernel
    assert set(df[df.experiment == "v4"].kernel) == {"v3", "xla"}
    pub_v1 = df[(df.source == "published") & (df.experiment == "v1") & (df.kernel == "v1")]
    assert pub_v1.set_index("m").status.to_dict()[2048] == "failed"
    assert df.equals(combine([estimates.sample(frac=1, random_state=0)], published))  # stable order


def test_combine_without_published_data(estimates):
    df = combine([estimates], None)
    assert set(df.source) == {"estimate"}


def test_duplicate_keys_are_refused(estimates):
    df = combine([estimates], None)
    with pytest.raises(ValueError, match="rows share a key"):
        check_unique(pd.concat([df, df.iloc[:1]]))


def test_best_vs_xla(estimates):
    best = best_vs_xla(combine([estimates], None))
    assert set(best.estimator) == {"compiler"}  # no modelled columns in this table
    best = best.set_index(["dtype", "size"])
    row = best.loc[("bfloat16", 4096)]
    assert (row.bm, row.bk, row.bn) == (512, 1024, 1024)
    assert row.fraction_of_xla == pytest.approx(150 / 160)
    # the raised-limit v1 row does not count: only default-limit configurations compete
    assert ("float32", 2048) not in best.index


def measured(size, samples, label="vm1", timestamp="2026-11-30T10:00:00+00:00", target="v5e"):
    return dict(source="measured", target=target, experiment="xla", kernel="xla", dtype="float32",
                m=size, k=size, n=size, status="ok", vmem_limit_bytes=16 << 20, raised_limit=False,
                run_label=label, timestamp=timestamp, samples_s=samples, wall_samples_s=samples)


def test_measured_rows_carry_their_ratio_to_the_estimate(estimates):
    from tpu_matmul_repro.experiments.measure.statistics import derive

    rows = derive(to_frame([measured(2048, [2e-4, 2.5e-4, 3e-4, 3e-4, 4e-4])], VERSIONS))
    est_seconds = 2 * 2048**3 / 90e12  # the fixture's estimate: 90 TFLOP/s (seconds derived below)
    estimates = estimates.assign(seconds=2.0 * estimates.m.astype(float) ** 3 / (estimates.tflops * 1e12))
    df = combine([estimates], None, rows)
    check_unique(df)
    got = df[df.source == "measured"]
    assert len(got) == 1 and got.experiment.iloc[0] == "xla"  # no measured experiment to join
    assert got.measured_over_estimate.iloc[0] == pytest.approx(3e-4 / est_seconds)
    assert df[df.source == "estimate"].measured_over_estimate.isna().all()


def test_figures_draw_each_targets_latest_run_only():
    from tpu_matmul_repro.analysis.runs import latest_runs

    rows = to_frame([measured(1024, [1e-3] * 5, "old", "2026-01-01T00:00:00+00:00"),
                     measured(1024, [1e-3] * 5, "new", "2026-06-01T00:00:00+00:00"),
                     measured(1024, [1e-3] * 5, "other", "2025-01-01T00:00:00+00:00", target="v6e")],
                    VERSIONS)
    kept = latest_runs(rows)
    assert sorted(zip(kept.target, kept.run_label, strict=True)) == [("v5e", "new"), ("v6e", "other")]


def test_stages_after_the_aggregate_read_the_latest_runs_without_samples(estimates, tmp_path):
    """read_results: every estimate, each target's latest measured run, no raw samples; read_measured:
    every measured row, the columns the report shows."""
    from tpu_matmul_repro.analysis.runs import read_measured, read_results
    from tpu_matmul_repro.experiments.core.schema import SAMPLE_COLUMNS
    from tpu_matmul_repro.experiments.measure.statistics import derive

    runs = [measured(size, [1e-3] * 5, f"day{d}", f"2026-01-{d + 1:02d}T00:00:00+00:00")
            for d in range(5) for size in (1024, 2048)]
    runs.append(measured(1024, [1e-3] * 5, "other", "2025-01-01T00:00:00+00:00", target="v6e"))
    table = combine([estimates], None, derive(to_frame(runs, VERSIONS)))
    path = tmp_path / "matmul.parquet"
    table.to_parquet(path, index=False)

    df = read_results(path)
    assert not set(SAMPLE_COLUMNS) & set(df.columns)
    kept = df[df.source == "measured"]
    assert sorted(set(zip(kept.target, kept.run_label, strict=True))) == [("v5e", "day4"), ("v6e", "other")]
    assert len(kept) == 3
    # the rest of the table as a plain read gives it, in the file's order
    whole = pd.read_parquet(path).drop(columns=list(SAMPLE_COLUMNS))
    pd.testing.assert_frame_equal(df[df.source != "measured"].reset_index(drop=True),
                                  whole[whole.source != "measured"].reset_index(drop=True))
    every = read_measured(path)
    assert len(every) == 11 and set(every.run_label) == {f"day{d}" for d in range(5)} | {"other"}
    assert "samples_s" not in every and "seconds" in every
