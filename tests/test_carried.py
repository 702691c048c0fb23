"""Carried measurement files are checked before they join the table: each bad file is refused with a
message naming the file, the column and the first bad row."""
import numpy as np
import pandas as pd
import pytest

from tpu_matmul_repro.experiments.core.schema import DataError, check_measured, frame

VERSIONS = {"jax_version": "0.10.2", "libtpu_version": "0.0.42.1", "git_sha": "abc"}


def measured_rows(n=3):
    rows = [dict(source="measured", target="v5e", experiment="xla", kernel="xla", dtype="bfloat16",
                 m=512 * (i + 1), k=512 * (i + 1), n=512 * (i + 1), status="ok", run_label="vm",
                 timestamp="2026-11-30T00:00:00+00:00", vmem_limit_bytes=16 << 20, device_kind="TPU v5 lite",
                 samples_s=[1e-4 * (i + 1)] * 5, wall_samples_s=[2e-4 * (i + 1)] * 5,
                 device_samples_s=[0.9e-4 * (i + 1)] * 5, dispatch_floor_s=2e-5, rel_error=1e-3,
                 max_tile_error=1e-3, num_chips=1, num_devices=1, calls_per_sample=4,
                 timer="profiler_device_events") for i in range(n)]
    rows.append(dict(rows[0], experiment="v5", kernel="v5", bm=256, bk=512, bn=256, m=1024, k=1024, n=1024))
    rows.append(dict(rows[0], experiment="v1", kernel="v1", m=4096, k=4096, n=4096, status="vmem_oom",
                     samples_s=[], wall_samples_s=[], device_samples_s=[], rel_error=None,
                     max_tile_error=None))
    return frame(rows, VERSIONS)


def write(df, tmp_path, name="vm.parquet"):
    path = tmp_path / name
    df.to_parquet(path, index=False)
    return path


def test_a_good_file_passes(tmp_path):
    df = check_measured(write(measured_rows(), tmp_path), min_samples=5, max_rows=100)
    assert len(df) == 5 and list(df.samples_s.iloc[0]) == [1e-4] * 5


def edit(column, row, value):
    def apply(df):
        df[column] = df[column].astype(object)
        df.at[row, column] = value
        return df
    return apply


@pytest.mark.parametrize("change, message", [
    (lambda df: df.drop(columns=["kernel", "m"]), r"missing column\(s\) \['kernel', 'm'\]"),
    (edit("samples_s", 1, [-2.7e-4] * 5), r"column 'samples_s', row 1: -0\.00027 is not a positive, finite"),
    (edit("samples_s", 2, [0.0] * 5), r"column 'samples_s', row 2: 0\.0 is not a positive, finite"),
    (edit("wall_samples_s", 0, [1e-4, np.nan, 1e-4, 1e-4, 1e-4]),
     r"column 'wall_samples_s', row 0: nan is not"),
    (edit("samples_s", 1, [1e-4] * 2), r"column 'samples_s', row 1: 2 samples in an ok row; at least 5"),
    (lambda df: df.assign(samples_s=df.samples_s.map(lambda s: [str(x) for x in s])),
     r"column 'samples_s' holds list<element: string>, not lists of seconds"),
    (lambda df: df.assign(m=df.m.astype(str)), r"column 'm' holds (large_)?string, not whole numbers"),
    (edit("kernel", 2, "v9"), r"column 'kernel', row 2: 'v9' is not one of"),
    (edit("source", 0, "estimate"), r"column 'source', row 0: 'estimate' is not one of \['measured'\]"),
    (edit("status", 0, "great"), r"column 'status', row 0: 'great' is not one of"),
    (edit("bm", 3, 300), r"column 'bm', row 3: bm=300 does not divide m=1024"),
    (edit("m", 1, 1048576), r"column 'm', row 1: 1048576 is not a size from 1 to 32768"),
    (lambda df: df.iloc[:0], r"no rows"),
    # issue 29: the primary timer's samples, and every other column a later step reads
    (edit("device_samples_s", 0, [-1e-4] * 5),
     r"column 'device_samples_s', row 0: -0\.0001 is not a positive"),
    (edit("device_samples_s", 1, [1e-4, np.nan, 1e-4, 1e-4, 1e-4]),
     r"column 'device_samples_s', row 1: nan is"),
    (edit("device_samples_s", 2, [np.inf] * 5), r"column 'device_samples_s', row 2: inf is not"),
    (edit("device_samples_s", 0, [1e-4] * 3), r"column 'device_samples_s', row 0: 3 samples in an ok row"),
    (edit("samples_s", 0, [1e300] * 5),
     r"column 'samples_s', row 0: 1e\+300 is not a positive, finite number of seconds \(at most 7200\)"),
    (edit("dispatch_floor_s", 1, -1.0), r"column 'dispatch_floor_s', row 1: -1\.0 is not a finite number"),
    (edit("dispatch_floor_s", 1, np.inf), r"column 'dispatch_floor_s', row 1: inf is not a finite number"),
    (edit("rel_error", 0, np.inf), r"column 'rel_error', row 0: inf is not a finite number, 0 or more "
                                   r"\(infinite only where the result is not ok\)"),
    (edit("num_chips", 2, 0), r"column 'num_chips', row 2: 0 is less than 1"),
    (lambda df: df.assign(calls_per_sample=1.5),
     r"column 'calls_per_sample' holds double, not whole numbers"),
    (lambda df: df.assign(raised_limit="no"), r"column 'raised_limit' holds (large_)?string, not true/false"),
    (lambda df: df.assign(device_kind=7), r"column 'device_kind' holds int64, not text"),
    (edit("target", 1, "../v5e"), r"column 'target', row 1: '\.\./v5e' is not a name"),
    (edit("timestamp", 3, "yesterday"), r"column 'timestamp', row 3: 'yesterday' is not an ISO 8601 time"),
    (lambda df: pd.concat([df, df.iloc[[2]]], ignore_index=True),
     r"column 'run_label', row 5: the same configuration and run label as row 2"),
])
def test_each_bad_file_is_refused_naming_file_column_and_row(tmp_path, change, message):
    path = write(change(measured_rows()), tmp_path)
    with pytest.raises(DataError, match=message) as e:
        check_measured(path, min_samples=5, max_rows=100)
    assert str(e.value).startswith(str(path))


def test_too_many_rows_and_files_that_are_not_parquet(tmp_path):
    path = write(measured_rows(), tmp_path)
    with pytest.raises(DataError, match=r"5 rows, more than measure.max_carried_rows=4"):
        check_measured(path, min_samples=5, max_rows=4)
    for name, content in (("empty.parquet", b""), ("text.parquet", b"not parquet at all\n")):
        (tmp_path / name).write_bytes(content)
        with pytest.raises(DataError, match=rf"{name}: not a readable parquet file"):
            check_measured(tmp_path / name, min_samples=5, max_rows=100)


def test_large_files_are_checked_in_bulk(tmp_path):
    rows = measured_rows(1)
    big = rows.iloc[[0] * 20000].reset_index(drop=True)  # one row 20000 times
    big["run_label"] = [f"r{i}" for i in range(len(big))]
    path = write(big, tmp_path)
    assert len(check_measured(path, min_samples=5, max_rows=100000)) == 20000
    big.at[19999, "samples_s"] = [1e-4, 1e-4, 1e-4, 1e-4, np.inf]
    with pytest.raises(DataError, match=r"row 19999: inf"):
        check_measured(write(big, tmp_path), min_samples=5, max_rows=100000)


def test_the_same_rows_in_two_files_are_refused_naming_both(tmp_path):
    """issue 29: one file under two names raised a traceback in the aggregate, which deleted the table."""
    from tpu_matmul_repro.experiments.core.schema import check_unique_files

    first = write(measured_rows(), tmp_path, "a.parquet")
    second = write(measured_rows(), tmp_path, "b.parquet")
    check_unique_files([first])
    with pytest.raises(DataError, match=rf"^{second}: column 'run_label', row 0: the same configuration "
                                        rf"and run label as row 0 of {first}; keep one of the files"):
        check_unique_files([first, second])
    check_unique_files([first, write(measured_rows().assign(run_label="vm2"), tmp_path, "c.parquet")])


def test_every_number_a_measured_row_carries_has_a_range_in_the_check():
    """A column added to the registry (COLUMN_SPECS) that measured rows fill cannot pass the gate
    unchecked: its kind is checked from the registry, its range must be one of check_measured's."""
    from tpu_matmul_repro.experiments.core import schema

    carried = [c for c in schema.COLUMN_SPECS if "measured" in c.sources and c.name not in schema.DERIVED]
    assert {c.name for c in carried if c.kind in ("int", "dim")} <= {*schema._INTEGER, *schema._COUNTS}
    assert {c.name for c in carried if c.kind == "float"} <= {*schema._QUANTITIES, *schema._ERRORS}
