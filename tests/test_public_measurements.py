"""The public validation set (data/public_measurements.csv): its invariants, and the loader's checks."""
import csv
import re
import subprocess
import sys

import pytest

from tpu_matmul_repro.analysis import public_measurements as pm
from tpu_matmul_repro.experiments.core.chips import CHIPS

MIN_ROWS = 100
MIN_SOURCES = 4


@pytest.fixture(scope="module")
def raw():
    with open(pm.DEFAULT_PATH, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def table():
    return pm.load()


def test_header_is_the_documented_columns():
    with open(pm.DEFAULT_PATH, newline="", encoding="utf-8") as f:
        assert next(csv.reader(f)) == pm.COLUMNS


def test_enough_rows_from_enough_sources(table):
    assert len(table) >= MIN_ROWS
    assert table.source.nunique() >= MIN_SOURCES


def test_every_source_is_described(raw):
    text = (pm.DEFAULT_PATH.with_suffix(".md")).read_text(encoding="utf-8")
    for source in {r["source"] for r in raw}:
        assert f"`{source}`" in text, f"{source} has no section in public_measurements.md"


def test_seconds_recomputed_from_the_printed_value(raw):
    # an independent restatement of the documented formula, not the loader's function
    scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
    for r in raw:
        m, k, n, value = int(r["m"]), int(r["k"]), int(r["n"]), float(r["value"])
        expected = 2 * m * k * n / (value * 1e12) if r["unit"] == "TFLOP/s" else value * scale[r["unit"]]
        assert float(r["seconds"]) == pytest.approx(expected, rel=1e-12), r["locator"]


def test_printed_value_appears_in_its_quote(raw):
    assert all(r["value"] in r["quote"] for r in raw)


def test_no_row_twice(raw):
    places = [(r["url"], r["locator"]) for r in raw]
    assert len(places) == len(set(places))


def test_no_rate_above_the_chips_peak(table):
    # a number faster than the hardware can go was misread (wrong shape, unit or generation)
    for r in table.itertuples():
        rate = 2 * r.m * r.k * r.n / r.seconds
        assert rate <= CHIPS[r.generation].peak_flops[r.dtype], (r.source, r.locator, rate)


def test_the_posts_own_measurements_are_not_in_the_set(raw):
    # the timing model is fitted on the post's numbers; its repository is not a validation source
    assert not any("PALLAS_TPU_KERNEL_MATMUL" in r["url"] or "sqtian" in r["url"] for r in raw)


@pytest.mark.parametrize("shape, expected", [
    ((1024, 1024, 1024), "square"),
    ((128, 4096, 7168), "llm_projection"),
    ((16384, 12288, 12288), "llm_projection"),
    ((257, 256, 256), "unaligned"),
    ((1000, 1000, 1000), "unaligned"),
])
def test_shape_class(shape, expected):
    assert pm.shape_class(*shape) == expected


def test_loaded_table_is_typed_and_classified(table):
    assert table.m.dtype.kind == "i" and table.seconds.dtype.kind == "f"
    assert set(table.shape_class) <= set(pm.SHAPE_CLASSES)
    assert table.loc[table.kernel == "xla", ["bm", "bk", "bn"]].isna().all().all()


def _rewrite(tmp_path, raw, row=0, **changes):
    rows = [dict(r) for r in raw]
    rows[row].update(changes)
    path = tmp_path / "bad.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=pm.COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.mark.parametrize("column, value", [
    ("generation", "v9"),
    ("seconds", "0.5"),
    ("m", "-3"),
    ("unit", "furlongs"),
    ("quote", "no number here"),
    ("url", "ftp://example.org"),
])
def test_bad_value_is_named_in_one_line(tmp_path, raw, column, value):
    path = _rewrite(tmp_path, raw, row=3, **{column: value})
    with pytest.raises(pm.PublicDataError) as err:
        pm.load(path)
    message = str(err.value)
    assert "\n" not in message
    assert str(path) in message and "row 5" in message and f"column {column}" in message
    assert repr(value) in message


def test_missing_column_is_named(tmp_path, raw):
    path = tmp_path / "short.csv"
    columns = [c for c in pm.COLUMNS if c != "method"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(raw[:2])
    with pytest.raises(pm.PublicDataError, match=r"missing \['method'\]"):
        pm.load(path)


def test_command_line(tmp_path, raw, capsys):
    assert pm.main([]) == 0 and f"{len(raw)} rows from" in capsys.readouterr().out
    assert pm.main([str(tmp_path / "nowhere.csv")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    # one process: `python -m` reaches main, and its refusal is an exit status and one line
    module = "tpu_matmul_repro.analysis.public_measurements"
    bad = subprocess.run([sys.executable, "-m", module, str(_rewrite(tmp_path, raw, dtype="float64"))],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stdout == ""
    assert len(bad.stderr.strip().splitlines()) == 1 and "column dtype" in bad.stderr


def test_documented_counts_match_the_file(table):
    text = pm.DEFAULT_PATH.with_suffix(".md").read_text(encoding="utf-8")
    documented = {(source, generation): int(rows) for source, generation, rows
                  in re.findall(r"^\| `([\w-]+)` \| (\w+) \| (\d+) \|$", text, flags=re.M)}
    actual = table.groupby(["source", "generation"]).size().to_dict()
    assert documented == actual
    assert f"{len(table)} rows from {table.source.nunique()} sources" in text
