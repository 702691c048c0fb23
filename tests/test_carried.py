"""Carried measurement files are checked before they join the table: each bad file is refused with a
message naming the file, the column and the first bad row."""
import numpy as np
import pandas as pd
import pytest

from tpu_matmul_repro.experiments.core.schema import DataError, check_measured, frame

VERSIONS = {"jax_version": "0.10.2", "libtpu_version": "0.0.42.1",
            "git_sha": "df2331c0a1b2c3d4e5f60718293a4b5c6d7e8f90"}
TOLERANCE = {"float32": 2e-2, "bfloat16": 2e-2, "int8": 0}  # measure.tolerance's default


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
    df = check_measured(write(measured_rows(), tmp_path), min_samples=5, max_rows=100, tolerance=TOLERANCE)
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
    # issue 39: physics (1e-9 s for 1536^3 bf16 on v5e was 7.2 million TFLOP/s in the report)
    (edit("device_samples_s", 2, [1e-9] * 5), r"column 'device_samples_s', row 2: 1e-09 s is faster than "
     r"physics allows: v5e's peak \(197 TFLOP/s bfloat16\) and HBM bandwidth \(820 GB/s\) allow no "
     r"less than 3\.68e-05 s for 1536x1536x1536"),
    (edit("wall_samples_s", 0, [1e-7] * 5), r"column 'wall_samples_s', row 0: 1e-07 s is faster than"),
    (edit("peak_tflops", 0, 1e9), r"column 'peak_tflops', row 0: 1e\+09, not v5e's 197 for bfloat16"),
    (edit("hbm_bytes", 1, 1000), r"column 'hbm_bytes', row 1: 1000 bytes: less than its operands and output "
                                 r"\(6291456 bytes\)"),
    (edit("vmem_limit_bytes", 0, 1 << 40), r"column 'vmem_limit_bytes', row 0: 1099511627776 bytes, more "
                                           r"than v5e's physical VMEM \(134217728 bytes, 128 MiB\)"),
    (edit("vmem_bytes", 3, 1 << 40), r"column 'vmem_bytes', row 3: 1099511627776 bytes, more than v5e's"),
    # status against the errors and measure.tolerance
    (edit("max_tile_error", 0, 100.0), r"column 'max_tile_error', row 0: 100 in an ok row, over "
                                       r"measure\.tolerance\.bfloat16=0\.02: that output is wrong"),
    (edit("max_tile_error", 1, np.nan), r"column 'max_tile_error', row 1: nan in an ok row: its output"),
    (edit("rel_error", 2, np.nan), r"column 'rel_error', row 2: nan in an ok row"),
    (lambda df: df.drop(columns=["max_tile_error"]), r"missing column\(s\) \['max_tile_error'\]: an ok"),
    (edit("rel_error", 4, np.inf), r"column 'rel_error', row 4: inf in a vmem_oom row, whose kernel never"),
    (lambda df: edit("oom_limit_bytes", 4, 16 << 20)(edit("vmem_bytes", 4, 12 << 20)(df)),
     r"column 'vmem_bytes', row 4: 12582912 bytes, yet out of VMEM: no more than its limit 16777216"),
    # names the project knows
    (edit("target", 0, "v9"), r"column 'target', row 0: 'v9' is not a target of this project "
                              r"\(experiments/core/chips\.py: \['7x', 'v4', 'v5e', 'v5p', 'v6e'\], or cpu"),
    (edit("target", 2, "v5lite"), r"column 'target', row 2: 'v5lite' is not a target of this project"),
    (edit("device_kind", 0, "TPU v6 lite"),
     r"column 'device_kind', row 0: 'TPU v6 lite' is not the device kind of target 'v5e' \('TPU v5 lite'\)"),
    (lambda df: df.assign(git_sha="</td><script>alert(3)</script>"),
     r"column 'git_sha', row 0: '</td><script>alert\(3\)</script>' is not a commit"),
    (lambda df: df.assign(git_sha="abc"), r"column 'git_sha', row 0: 'abc' is not a commit"),
    (edit("jax_version", 1, "<b>new</b>"), r"column 'jax_version', row 1: '<b>new</b>' is not a version"),
    (lambda df: df.assign(libtpu_version="0.0.5" * 20), r"column 'libtpu_version', row 0: .* is not a"),
    (edit("timer", 0, "stopwatch"), r"column 'timer', row 0: 'stopwatch' is not one of \['', "
                                    r"'profiler_device_events', 'batched_async_calls'\]"),
    (edit("precision", 0, "quad"), r"column 'precision', row 0: 'quad' is not one of"),
    (edit("toolchain", 0, "post"), r"column 'toolchain', row 0: 'post': only estimates have a toolchain"),
    (edit("cycles_method", 1, "profiled"), r"column 'cycles_method', row 1: 'profiled': only estimates"),
    (edit("error", 4, "out of VMEM\x1b[31m"), r"column 'error', row 4: .* holds a control character"),
    (edit("error", 4, "x" * 1001), r"column 'error', row 4: 1001 characters, more than 1000"),
    (edit("run_label", 0, "a" * 65), r"column 'run_label', row 0: 65 characters, more than 64"),
    (edit("bm", 0, 128), r"column 'bm', row 0: kernel xla has no blocks, yet bm=128"),
    (edit("bn", 3, None), r"column 'bn', row 3: kernel v5 has blocks: a row of it names bm, bk and bn"),
])
def test_each_bad_file_is_refused_naming_file_column_and_row(tmp_path, change, message):
    path = write(change(measured_rows()), tmp_path)
    with pytest.raises(DataError, match=message) as e:
        check_measured(path, min_samples=5, max_rows=100, tolerance=TOLERANCE)
    assert str(e.value).startswith(str(path))


def test_a_row_that_keeps_to_physics_and_the_tolerance_passes(tmp_path):
    """The bounds are bounds, not guesses: a sample just slower than the chip allows, a tile error at the
    tolerance, a device kind by jax's other name, a dirty checkout's commit and a CPU run pass."""
    from tpu_matmul_repro.experiments.core.consistency import least_seconds

    df = measured_rows()
    least = least_seconds(df)
    df["device_samples_s"] = [[t * 1.0001] * 5 if t else s
                              for t, s in zip(least, df.device_samples_s, strict=True)]
    df.loc[0, "max_tile_error"] = 0.02
    df.loc[1, "device_kind"] = "TPU v5e"  # jax's alias of TPU v5 lite
    df["git_sha"] = "df2331c0a1b2c3d4e5f60718293a4b5c6d7e8f90-dirty"
    check_measured(write(df, tmp_path), min_samples=5, max_rows=100, tolerance=TOLERANCE)
    cpu = measured_rows().assign(target="cpu", device_kind="cpu", git_sha="unknown")
    cpu["device_samples_s"] = [[1e-12] * 5 if s else s for s in cpu.device_samples_s]  # no chip: no bound
    check_measured(write(cpu, tmp_path), min_samples=5, max_rows=100, tolerance=TOLERANCE)
    with pytest.raises(DataError, match=r"row 0: 0.03 in an ok row, over measure.tolerance.bfloat16=0.029"):
        check_measured(write(df.assign(max_tile_error=0.03), tmp_path), min_samples=5, max_rows=100,
                       tolerance=TOLERANCE | {"bfloat16": 0.029})


def test_the_names_checked_are_those_the_harness_writes():
    """consistency.py keeps copies (it must not import jax): they are the harness's and the check's."""
    from tpu_matmul_repro.experiments.core import consistency
    from tpu_matmul_repro.experiments.core.compiler_output import ERROR_CHARS
    from tpu_matmul_repro.experiments.measure import harness, output_check

    assert set(consistency.TIMERS) == {"", harness.PROFILER, harness.BATCHED}
    assert set(consistency.PRECISIONS) == {"", "unknown", *(name for name, _ in output_check.PRECISION_BANDS)}
    assert consistency.MAX_ERROR_CHARS == ERROR_CHARS


def test_too_many_rows_and_files_that_are_not_parquet(tmp_path):
    path = write(measured_rows(), tmp_path)
    with pytest.raises(DataError, match=r"5 rows, more than measure.max_carried_rows=4"):
        check_measured(path, min_samples=5, max_rows=4, tolerance=TOLERANCE)
    for name, content in (("empty.parquet", b""), ("text.parquet", b"not parquet at all\n")):
        (tmp_path / name).write_bytes(content)
        with pytest.raises(DataError, match=rf"{name}: not a readable parquet file"):
            check_measured(tmp_path / name, min_samples=5, max_rows=100, tolerance=TOLERANCE)


def test_large_files_are_checked_in_bulk(tmp_path):
    rows = measured_rows(1)
    big = rows.iloc[[0] * 20000].reset_index(drop=True)  # one row 20000 times
    big["run_label"] = [f"r{i}" for i in range(len(big))]
    path = write(big, tmp_path)
    assert len(check_measured(path, min_samples=5, max_rows=100000, tolerance=TOLERANCE)) == 20000
    big.at[19999, "samples_s"] = [1e-4, 1e-4, 1e-4, 1e-4, np.inf]
    with pytest.raises(DataError, match=r"row 19999: inf"):
        check_measured(write(big, tmp_path), min_samples=5, max_rows=100000, tolerance=TOLERANCE)


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


def test_every_text_a_measured_row_carries_is_checked_against_what_the_project_knows():
    """issue 39: free text (a git_sha of markup) reached the licence and every figure's metadata. Each
    text column a carried file fills is a known value, a name, a version or commit pattern, or, for
    the error message alone, free text without control characters, within a length."""
    from tpu_matmul_repro.experiments.core import consistency, schema

    carried = {c.name for c in schema.COLUMN_SPECS if c.kind == "text" and c.name not in schema.DERIVED
               and ("measured" in c.sources or c.name in consistency.ESTIMATE_ONLY_TEXT)}
    known = {"source", "kernel", "dtype", "status", "timestamp", *schema._PATTERNS,  # schema._check_values
             "device_kind", "timer", "precision", *consistency.ESTIMATE_ONLY_TEXT,
             *consistency.VERSION_COLUMNS, "git_sha", "error"}
    assert carried <= known, carried - known
