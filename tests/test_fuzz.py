"""Fuzzed gates (issue 29): valid carried files corrupted column by column and valid configs corrupted
key by key. Each corruption is either refused by the gate in one line naming what is wrong, or
accepted and turned into a table (a plan) of finite numbers only; never an exception of another kind.

The check functions run in-process, not through Snakemake. Examples per test: HYPOTHESIS_PROFILE
selects "default" (a few dozen, for the fast test loop) or "ci" (many more, for .ci/run).
"""
import copy
import functools
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tpu_matmul_repro.analysis import model_columns
from tpu_matmul_repro.analysis import timing_model as tm
from tpu_matmul_repro.analysis.aggregate import (
    check_unique,
    combine,
    load_measured,
    load_published,
)
from tpu_matmul_repro.experiments.core.schema import (
    FLOAT_COLUMNS,
    MEASURED_REQUIRED,
    DataError,
    check_measured,
    frame,
)
from tpu_matmul_repro.experiments.plan.config import ConfigError, checked
from tpu_matmul_repro.experiments.plan.plan import make_plan

ROOT = Path(__file__).resolve().parent.parent
_quiet = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
# default: the whole file in about ten seconds on a busy 2-core machine; ci: many times the examples
settings.register_profile("default", max_examples=12, deadline=None, suppress_health_check=_quiet)
settings.register_profile("ci", max_examples=200, deadline=None, suppress_health_check=_quiet)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

VERSIONS = {"jax_version": "0.10.2", "libtpu_version": "0.0.42.1",
            "git_sha": "df2331c0a1b2c3d4e5f60718293a4b5c6d7e8f90"}
TOLERANCE = {"float32": 2e-2, "bfloat16": 2e-2, "int8": 0}  # measure.tolerance's default
SIZES = (512, 1024, 1536)


def valid_file() -> pd.DataFrame:
    """A carried file as the harness writes one: XLA and v5 rows on v5e, ok and failed."""
    rows = [dict(source="measured", target="v5e", device_kind="TPU v5 lite", experiment="xla",
                 kernel="xla", dtype="bfloat16", m=s, k=s, n=s, status="ok", run_label="vm",
                 timestamp="2026-11-30T00:00:00+00:00", vmem_limit_bytes=16 << 20,
                 samples_s=[1e-4 * (i + 1)] * 5, wall_samples_s=[2e-4 * (i + 1)] * 5,
                 device_samples_s=[0.9e-4 * (i + 1)] * 5, dispatch_floor_s=2e-5, rel_error=1e-3,
                 max_tile_error=1e-3, num_chips=1, num_devices=1, calls_per_sample=4, hbm_bytes=3 * s * s * 2,
                 peak_tflops=197.0, hbm_bytes_per_s=8.2e11, timer="profiler_device_events", compile_s=0.5)
            for i, s in enumerate(SIZES)]
    rows.append(dict(rows[1], experiment="v5", kernel="v5", bm=256, bk=512, bn=256))
    rows.append(dict(rows[1], experiment="v1", kernel="v1", m=4096, k=4096, n=4096, hbm_bytes=3 * 4096**2 * 2,
                     status="vmem_oom",
                     samples_s=[], wall_samples_s=[], device_samples_s=[], rel_error=None,
                     max_tile_error=None, error="out of VMEM"))
    return frame(rows, VERSIONS)


@functools.cache
def estimates() -> pd.DataFrame:
    rows = [dict(source="estimate", toolchain="current", target="v5e", device_kind="TPU v5 lite",
                 experiment="xla", kernel="xla", dtype="bfloat16", m=s, k=s, n=s, status="ok",
                 vmem_limit_bytes=16 << 20, est_cycles=s**3 // 50, seconds=s**3 / 50 / 1.5e9,
                 tflops=2 * s**3 / (s**3 / 50 / 1.5e9) / 1e12, cycles_method="xla_cost_model",
                 peak_tflops=197.0, hbm_bytes=3 * s * s * 2, hbm_bytes_per_s=8.2e11)
            for s in SIZES]
    return frame(rows, VERSIONS)


@functools.cache
def published() -> pd.DataFrame:
    return load_published(ROOT / "data" / "published_v5e.csv")


def build_table(paths) -> pd.DataFrame:
    """What scripts/aggregate.py does with the measured files, in-process."""
    compilers = dict(toolchain="current", served={})
    df = combine([estimates().copy()], published().copy(), load_measured(paths), **compilers)
    check_unique(df)
    return model_columns.apply(df, **compilers)[0]


COLUMNS = sorted(set(valid_file().columns) | set(MEASURED_REQUIRED))
LISTS = ("samples_s", "wall_samples_s", "device_samples_s")
CORRUPTIONS = ("nan", "inf", "-inf", "negative", "zero", "text", "float", "missing", "none", "empty_list",
               "duplicate_row", "mixed_target", "huge", "tiny", "markup")


def corrupt(df: pd.DataFrame, column: str, row: int, how: str) -> pd.DataFrame:
    df = df.copy()
    if how == "missing":
        return df.drop(columns=[column], errors="ignore")
    if how == "duplicate_row":
        return pd.concat([df, df.iloc[[row]]], ignore_index=True)
    if how == "mixed_target":
        df.loc[row, "target"] = "v6e" if row % 2 else "cpu"
        return df
    old = df.at[row, column] if column in df else None
    numeric = isinstance(old, (int, float, np.number)) and not isinstance(old, bool)
    listed = column in LISTS
    values = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "none": None, "text": "fast",
              "huge": 1e300, "zero": 0, "negative": -1, "empty_list": [], "tiny": 1e-12,
              "markup": "</td><script>alert(3)</script>",
              "float": float(old) + 0.5 if numeric and not pd.isna(old) else 0.5}
    value = values[how]
    if listed and how not in ("none", "text", "empty_list", "markup"):  # one sample of the row's list
        samples = list(df.at[row, column]) if isinstance(df.at[row, column], (list, np.ndarray)) else []
        value = [*samples[:-1], value] if samples else [value]
    df[column] = df[column].astype(object) if column in df else None
    df.at[row, column] = value
    return df


@given(column=st.sampled_from(COLUMNS), row=st.integers(0, 4), how=st.sampled_from(CORRUPTIONS))
def test_a_corrupted_carried_file_is_refused_in_one_line_or_gives_finite_numbers(tmp_path, column, row, how):
    df = corrupt(valid_file(), column, row, how)
    path = tmp_path / "carried.parquet"
    try:
        df.to_parquet(path, index=False)
    except Exception:  # noqa: BLE001  pandas cannot even write it: no such file can be carried
        assume(False)
    try:
        check_measured(path, min_samples=5, max_rows=1000, tolerance=TOLERANCE)
    except DataError as e:
        message = str(e)
        assert "\n" not in message and message.startswith(str(path)), message
        named = ("missing column" in message if how == "missing" else
                 "run_label" in message if how == "duplicate_row" else repr(column) in message
                 or "target" in message)
        assert named, (column, how, message)
        return
    table = build_table([path])
    numbers = table.select_dtypes("number")
    assert not np.isinf(numbers.to_numpy(dtype="float64", na_value=np.nan)).any(), (column, how)
    measured = table[(table.source == "measured") & (table.status == "ok")]
    for col in ("seconds", "tflops", "wall_seconds", "batched_seconds", "p25_seconds", "p75_seconds"):
        assert (measured[col] > 0).all(), (column, how, col, measured[col].tolist())
    assert set(FLOAT_COLUMNS) <= set(table.columns)


# Examples Hypothesis found, kept as regular tests (each failed before the gate checked its column).
@pytest.mark.parametrize("column, row, how, message", [
    ("device_samples_s", 0, "negative", "column 'device_samples_s', row 0: -1.0 is not a positive"),
    ("device_samples_s", 1, "nan", "column 'device_samples_s', row 1: nan is not a positive"),
    ("device_samples_s", 2, "inf", "column 'device_samples_s', row 2: inf is not a positive"),
    ("dispatch_floor_s", 0, "inf", "column 'dispatch_floor_s', row 0: inf is not a finite number"),
    ("samples_s", 0, "huge", "column 'samples_s', row 0: 1e+300 is not a positive, finite number"),
    ("timestamp", 0, "text", "column 'timestamp', row 0: 'fast' is not an ISO 8601 time"),
    ("m", 1, "duplicate_row", "column 'run_label', row 5: the same configuration and run label as row 1"),
    # issue 39: an infinite error in the out-of-VMEM row reached the table as inf
    ("rel_error", 4, "inf", "column 'rel_error', row 4: inf in a vmem_oom row, whose kernel never ran"),
])
def test_found_corruptions_are_refused(tmp_path, column, row, how, message):
    path = tmp_path / "carried.parquet"
    corrupt(valid_file(), column, row, how).to_parquet(path, index=False)
    with pytest.raises(DataError) as e:
        check_measured(path, min_samples=5, max_rows=1000, tolerance=TOLERANCE)
    assert message in str(e.value)


def test_an_empty_block_column_joins_the_table_as_whole_numbers(tmp_path):
    """Found by the fuzz test above: the only blocked row's bk set to NaN left a column of nothing,
    which parquet stores as floats; the aggregate's merge on the table's key then failed (object
    against Int64) until each carried file got the table's column types. A blocked kernel's row
    without its bk is refused now (issue 39); a file of unblocked kernels alone still has empty block
    columns."""
    path = tmp_path / "carried.parquet"
    valid_file().drop(index=3).to_parquet(path, index=False)
    check_measured(path, min_samples=5, max_rows=1000, tolerance=TOLERANCE)
    assert len(build_table([path]))
    corrupt(valid_file(), "bk", 3, "nan").to_parquet(path, index=False)
    with pytest.raises(DataError, match=r"column 'bk', row 3: kernel v5 has blocks"):
        check_measured(path, min_samples=5, max_rows=1000, tolerance=TOLERANCE)


def test_the_valid_file_builds_a_table_of_finite_numbers(tmp_path):
    path = tmp_path / "carried.parquet"
    valid_file().to_parquet(path, index=False)
    check_measured(path, min_samples=5, max_rows=1000, tolerance=TOLERANCE)
    table = build_table([path])
    assert (table[(table.source == "measured") & (table.status == "ok")].tflops > 0).all()


# issue 39: the checks against physics, the status and the project's names, as properties

OK_ROWS = (0, 1, 2, 3)  # valid_file's ok rows (row 4 is out of VMEM)


@given(row=st.sampled_from(OK_ROWS), timer=st.sampled_from(LISTS),
       factor=st.floats(0.001, 1000, exclude_min=False) | st.sampled_from([0.999, 1.001]))
def test_a_sample_faster_than_the_chip_allows_is_refused_a_slower_one_passes(tmp_path, row, timer, factor):
    from tpu_matmul_repro.experiments.core.consistency import least_seconds

    df = valid_file()
    least = least_seconds(df)
    assume(least[row] * factor * 1000 <= 7200)
    for col in LISTS:  # every timer well within the bound, then one sample of one timer at factor x
        df[col] = [[max(t, least[i] * 1000)] * len(samples) for i, (t, samples) in enumerate(
            zip([1e-3] * len(df), df[col], strict=True))]
    df[timer] = df[timer].astype(object)
    df.at[row, timer] = [least[row] * 1000] * 4 + [least[row] * factor]
    path = tmp_path / "carried.parquet"
    df.to_parquet(path, index=False)
    if factor < 1:
        with pytest.raises(DataError, match=rf"column '{timer}', row {row}: .* s is faster than physics "
                                            r"allows: v5e's peak"):
            check_measured(path, min_samples=5, max_rows=1000, tolerance=TOLERANCE)
    else:
        check_measured(path, min_samples=5, max_rows=1000, tolerance=TOLERANCE)


@given(row=st.sampled_from(OK_ROWS), error=st.floats(0, 10), limit=st.floats(1e-6, 1))
def test_an_ok_row_passes_only_within_the_tolerance(tmp_path, row, error, limit):
    df = valid_file()
    df["max_tile_error"] = df.max_tile_error.where(df.status != "ok", 0.0)  # the other rows exact
    df.at[row, "max_tile_error"] = error
    path = tmp_path / "carried.parquet"
    df.to_parquet(path, index=False)
    tolerance = TOLERANCE | {"bfloat16": limit}
    if error > limit:
        with pytest.raises(DataError, match=rf"column 'max_tile_error', row {row}: .* in an ok row, over "
                                            rf"measure\.tolerance\.bfloat16="):
            check_measured(path, min_samples=5, max_rows=1000, tolerance=tolerance)
    else:
        check_measured(path, min_samples=5, max_rows=1000, tolerance=tolerance)


CHECKED_TEXT = ("target", "device_kind", "timer", "precision", "toolchain", "git_sha", "jax_version",
                "libtpu_version", "experiment", "run_label", "error")


@given(column=st.sampled_from(CHECKED_TEXT), row=st.integers(0, 4),
       text=st.text(max_size=80) | st.sampled_from(["v9", "v5lite", "TPU v5e", "cpu", "0.4.36", "abc1234",
                                                      "</td><script>alert(3)</script>", "x" * 1001]))
def test_text_joins_only_as_the_project_knows_it(tmp_path, column, row, text):
    """Any text in a column the report, the licence or a file name shows: refused in one line naming
    the column, or one the project knows (a target, a device kind, a version, a commit, a name)."""
    import re

    from tpu_matmul_repro.experiments.core import consistency

    df = valid_file()
    df[column] = df[column].astype(object)
    df.at[row, column] = text
    path = tmp_path / "carried.parquet"
    try:
        df.to_parquet(path, index=False)
    except Exception:  # noqa: BLE001  (surrogates pandas cannot write)
        assume(False)
    try:
        check_measured(path, min_samples=5, max_rows=1000, tolerance=TOLERANCE)
    except DataError as e:
        assert "\n" not in str(e) and f"column {column!r}, row {row}" in str(e) or (
            column == "target" and "'device_kind'" in str(e)), (column, text, str(e))
        return
    known = {"target": lambda t: t == "v5e" if row != 4 else t in ("v5e",),
             "device_kind": lambda t: t in ("", "TPU v5 lite", "TPU v5e"),
             "timer": lambda t: t in consistency.TIMERS, "precision": lambda t: t in consistency.PRECISIONS,
             "toolchain": lambda t: t == "",
             "git_sha": lambda t: re.fullmatch(consistency.GIT_SHA, t),
             "jax_version": lambda t: re.fullmatch(consistency.VERSION, t),
             "libtpu_version": lambda t: re.fullmatch(consistency.VERSION, t),
             "experiment": lambda t: re.fullmatch(r"[A-Za-z0-9]{1,64}", t),
             "run_label": lambda t: re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", t),
             "error": lambda t: len(t) <= 1000 and not re.search(consistency.CONTROL, t)}
    assert known[column](text), (column, text)


BASE = yaml.safe_load((ROOT / "config" / "config.ci.yaml").read_text())


def leaves(node, path=()):
    """(path, value) of every value of a config, dicts and lists included."""
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from leaves(value, (*path, i))


def written(path) -> str:
    """A key as the user writes it: compile_study.sizes[0]."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


KEYS = [path for path, _ in leaves(checked(BASE)) if path]
VALUES = st.sampled_from([math.nan, math.inf, -math.inf, -1, 0, 0.5, 1e9, "abc", None, [], {}, True, ""])


def set_path(config, path, value):
    node = config
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return config


def replacement(old, kind):
    """Values derived from the old one: as text (what --config gives), as a float, as a list."""
    return {"text": str(old) if not isinstance(old, (dict, list)) else old,
            "float": float(old) if isinstance(old, int) and not isinstance(old, bool) else old,
            "listed": [old]}[kind]


@given(path=st.sampled_from(KEYS), value=VALUES | st.sampled_from(["text", "float", "listed"]))
def test_a_corrupted_config_is_refused_naming_the_key_or_planned_with_finite_numbers(path, value):
    config = copy.deepcopy(checked(BASE))
    old = eval_path(config, path)
    if value in ("text", "float", "listed"):
        value = replacement(old, value)
    set_path(config, path, value)
    try:
        plan = make_plan(checked(config), label="fuzz")
    except ConfigError as e:
        message = str(e)
        assert "\n" not in message, message
        assert any(written(path[:n]) in message for n in range(len(path), 0, -1)), (path, value, message)
        return
    for where, leaf in leaves(plan.config):
        assert not (isinstance(leaf, float) and not math.isfinite(leaf)), (path, value, where)
    for job in plan.compile_jobs.values():
        for case in job.cases:
            assert all(isinstance(getattr(case, d), int) for d in ("m", "k", "n")), (path, value, case)
        assert math.isfinite(job.timeout_s) and job.timeout_s > 0


def eval_path(config, path):
    node = config
    for part in path:
        node = node[part]
    return node


# Examples Hypothesis found in the config, kept as regular tests.
@pytest.mark.parametrize("path, value, message", [
    (("compile_study", "timeout_s"), math.nan, "compile_study.timeout_s: nan is not a finite number"),
    (("measure", "tolerance", "float32"), math.nan, "measure.tolerance.float32: nan is not a finite number"),
    (("compile_study", "sizes", 0), 1024.0, "compile_study.sizes[0]: 1024.0 is not of type 'integer'"),
    (("correctness", "shapes", 0, 0), 256.0, "correctness.shapes[0][0]: 256.0 is not of type 'integer'"),
])
def test_found_config_corruptions_are_refused(path, value, message):
    config = set_path(copy.deepcopy(checked(BASE)), path, value)
    with pytest.raises(ConfigError) as e:
        make_plan(checked(config), label="fuzz")
    assert message in str(e.value)


# issue 39: config loading bounded before any walk, every tolerance bounded

@given(section=st.sampled_from(["correctness", "measure"]), dtype=st.sampled_from(["float32", "bfloat16"]),
       value=st.floats(-10, 1e300) | st.sampled_from([0.0, 1.0, 1.0000001, 1e-300]))
def test_every_tolerance_is_taken_only_in_its_bounds(section, dtype, value):
    config = copy.deepcopy(checked(BASE))
    config[section]["tolerance"][dtype] = value
    if 0 < value <= 1:
        checked(config)
        return
    with pytest.raises(ConfigError, match=rf"{section}\.tolerance\.{dtype}: "):
        checked(config)


@given(levels=st.integers(1, 12), width=st.integers(1, 12))
def test_yaml_aliases_load_within_the_bound_and_are_refused_beyond_it_quickly(tmp_path, levels, width):
    import time

    from tpu_matmul_repro.experiments.plan.config import MAX_VALUES, load_yaml

    lines = [f"a0: &a0 [{', '.join(['1'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    path = tmp_path / "aliases.yaml"
    path.write_text("\n".join(lines) + "\n")
    expanded = 1 + sum(1 + sum(width ** j for j in range(1, i + 2)) for i in range(levels))  # every value
    start = time.monotonic()
    try:
        load_yaml(path)
    except ConfigError as e:
        assert expanded > MAX_VALUES and "more than 100000 values" in str(e), (levels, width, str(e))
    else:
        assert expanded <= MAX_VALUES or levels + 2 > 32, (levels, width)
    assert time.monotonic() - start < 2


@given(depth=st.integers(1, 6000), kind=st.sampled_from(["list", "dict"]))
def test_nesting_is_refused_in_one_line_beyond_the_bound(depth, kind):
    from tpu_matmul_repro.experiments.plan.config import MAX_DEPTH

    value = []
    for _ in range(depth):
        value = [value] if kind == "list" else {"x": value}
    config = copy.deepcopy(checked(BASE))
    config["measure"] = value
    with pytest.raises(ConfigError) as e:  # measure holds a mapping of its keys: any of these is refused
        checked(config)
    message = str(e.value)
    assert "\n" not in message and message.startswith("invalid config: measure")
    assert ("nested deeper than" in message) == (depth + 1 > MAX_DEPTH), (depth, message[:200])


# The readers of what the project is given or keeps (experiments/core/reading.py and the checks after
# it): any bytes as a config or shapes file, any values in a run's fidelity.csv and timing_model.csv,
# any one byte changed in a compile cache entry.

@given(data=st.binary(max_size=300) | st.text(max_size=200).map(lambda t: t.encode("utf-8")),
       kind=st.sampled_from(["config file", "shapes file"]))
def test_any_bytes_as_a_config_or_shapes_file_are_a_mapping_or_one_line_naming_the_file(tmp_path, data, kind):
    from tpu_matmul_repro.experiments.plan.config import load_yaml

    path = tmp_path / "given.yaml"
    path.write_bytes(data)
    try:
        loaded = load_yaml(path, kind)
    except ConfigError as e:
        message = str(e)
        assert message.startswith(str(path)) and "\n" not in message, message
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            assert f"byte 0x{data[bad.start]:02X} at byte offset {bad.start} " in message, message
        return
    assert isinstance(loaded, dict)


HALFWIDTHS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [50.0, 60.0, -0.1, 0.0, 2.302585, 2.31, 1e300, "wide", ""])


@given(q80=HALFWIDTHS, q95=HALFWIDTHS, n=st.integers(-5, 10_000) | st.floats() | st.just("many"))
def test_a_band_read_back_is_refused_in_one_line_or_within_what_a_fit_gives(tmp_path, q80, q95, n):
    from test_advise import write_run

    from tpu_matmul_repro.advise.model import ResultsError, from_results, published_points
    from tpu_matmul_repro.analysis.intervals import MAX_HALFWIDTH

    write_run(tmp_path / "results", band={"0.8": q80, "0.95": q95, "n": n})
    try:
        model, why = from_results(tmp_path / "results")
    except ResultsError as e:
        assert "timing_model.json: " in str(e) and "\n" not in str(e), str(e)
        return
    if model is None:  # a run that could not size the band (too few points): the advisor's own fit
        assert why
        return
    widths = [*model.band.halfwidth.values()]
    assert all(0 <= q <= MAX_HALFWIDTH for q in widths), widths
    assert 1 <= model.band.n <= published_points()


@given(constant=st.sampled_from(tm.PARAMS),
       value=st.floats(allow_nan=True, allow_infinity=True))
def test_a_constant_read_back_is_refused_in_one_line_or_within_the_fit_s_bounds(tmp_path, constant, value):
    from test_advise import write_run

    from tpu_matmul_repro.advise.model import ResultsError, from_results

    write_run(tmp_path / "results", constants={constant: value})
    try:
        model, _ = from_results(tmp_path / "results")
    except ResultsError as e:
        assert "timing_model.json: " in str(e) and "\n" not in str(e), str(e)
        return
    vector = model.constants.vector()
    assert np.all(np.isfinite(vector)) and np.all(tm.LOWER <= vector) and np.all(vector <= tm.UPPER)


@given(data=st.binary(max_size=400))
def test_any_bytes_as_a_results_table_are_one_line_or_a_fallback(tmp_path, data):
    from test_advise import write_run

    from tpu_matmul_repro.advise.model import ResultsError, from_results

    write_run(tmp_path / "results")
    (tmp_path / "results" / "timing_model.json").write_bytes(data)
    try:
        model, why = from_results(tmp_path / "results")
    except ResultsError as e:
        assert "\n" not in str(e), str(e)
        return
    assert model is not None or why


@given(position=st.integers(0, 10_000), byte=st.integers(0, 255))
def test_one_changed_byte_in_a_compile_entry_is_a_miss_or_the_same_result(tmp_path, position, byte):
    """Never a different result: a change of layout (a space) may read back the same entry, any change of
    a value is a miss."""
    from tpu_matmul_repro.experiments.compile_study.cache import CompileCache
    from tpu_matmul_repro.experiments.core.cases import Case

    case = Case("v5", "bfloat16", 2048, 2048, 2048, 512, 1024, 1024)
    result = dict(status="ok", vmem_bytes=9 << 20, oom_limit_bytes=None, est_cycles=400_000, error="",
                  compile_s=1.5, prefetched=0)
    cache = CompileCache(tmp_path / "cache", dict(target="v5e", profile=True, versions={}, code="fuzz"))
    cache.put(case, None, result)
    (path,) = (tmp_path / "cache").rglob("*.json")
    data = bytearray(path.read_bytes())
    data[position % len(data)] = byte
    path.write_bytes(bytes(data))
    assert cache.get(case, None) in (None, result)
