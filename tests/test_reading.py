"""Every file the project is given or keeps is read bounded, by type and as UTF-8, and refused in one
line naming it; every number read back from a run or a cache is bounded on both sides."""
import dataclasses
import json
import math
import os
import re

import pandas as pd
import pytest
from test_advise import MODEL, write_run

from tpu_matmul_repro.advise import cli, search
from tpu_matmul_repro.advise import model as advisor_model
from tpu_matmul_repro.analysis import intervals
from tpu_matmul_repro.experiments.core import integrity, reading
from tpu_matmul_repro.experiments.plan.config import ConfigError, load_yaml

LATIN1 = b"projections: [{name: caf\xe9, k: 128, n: 128, count: 1}]\n"


def hostile(tmp_path, what: str):
    """A path that is each kind of file no reader should parse."""
    if what == "dev/zero":
        return "/dev/zero"
    if what == "fifo":
        os.mkfifo(tmp_path / "fifo")
        return str(tmp_path / "fifo")
    if what == "folder":
        (tmp_path / "folder").mkdir()
        return str(tmp_path / "folder")
    if what == "latin-1":
        (tmp_path / "latin1.yaml").write_bytes(LATIN1)
        return str(tmp_path / "latin1.yaml")
    if what == "large":  # sparse: 2 GiB that take no disk
        with open(tmp_path / "large.yaml", "wb") as f:
            f.truncate(2 << 30)
        return str(tmp_path / "large.yaml")
    raise ValueError(what)


WHY = {
    "dev/zero": "/dev/zero: a character device, not a {kind}",
    "fifo": "fifo: a FIFO (named pipe), not a {kind}",
    "folder": "folder: a folder, not a {kind}",
    "latin-1": "latin1.yaml: not UTF-8 text: byte 0xE9 at byte offset 24 (line 1)",
    "large": "large.yaml: 2147483648 bytes, more than the 1 MiB a {kind} may hold",
}


@pytest.mark.parametrize("what", list(WHY))
@pytest.mark.parametrize("kind", ["config file", "shapes file"])
def test_a_file_that_is_no_config_is_refused_by_type_size_or_encoding_in_one_line(tmp_path, what, kind):
    path = hostile(tmp_path, what)
    with pytest.raises(ConfigError) as e:
        load_yaml(path, kind)
    assert WHY[what].format(kind=kind) in str(e.value) and "\n" not in str(e.value), str(e.value)


def refuses_before_work(monkeypatch):
    monkeypatch.setattr(search, "search", lambda *a, **k: pytest.fail("work started"))
    monkeypatch.setattr(cli, "compiler_for", lambda *a, **k: pytest.fail("work started"))


@pytest.mark.parametrize("what", list(WHY))
@pytest.mark.parametrize("option", ["--shapes-file", "--config"])
def test_the_advisor_refuses_a_hostile_shapes_file_or_config_in_one_line(tmp_path, capsys, monkeypatch, what,
                                                                           option):
    """Once a UnicodeDecodeError traceback (latin-1), a MemoryError after a minute (1 GiB, /dev/zero)
    or a wait for a writer that never comes (a FIFO)."""
    refuses_before_work(monkeypatch)
    path = hostile(tmp_path, what)
    argv = ["--shapes-file", path, "--tokens", "8"] if option == "--shapes-file" else \
        ["1024x1024x1024", "--config", path]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    kind = "shapes file" if option == "--shapes-file" else "config file"
    assert len(err.splitlines()) == 1 and option in err and WHY[what].format(kind=kind) in err, err


@pytest.mark.parametrize("what", list(WHY))
def test_a_hostile_results_table_is_refused_in_one_line(tmp_path, capsys, monkeypatch, what):
    refuses_before_work(monkeypatch)
    results = tmp_path / "results"
    write_run(results)
    path = hostile(tmp_path, what)
    (results / "timing_model.json").unlink()
    (results / "timing_model.json").symlink_to(path)
    assert cli.main(["1024x1024x1024", "--results", str(results)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "timing_model.json: " in err, err
    expected = WHY[what].format(kind="results table").split(": ", 1)[1].replace("1 MiB", "16 MiB")
    assert expected in err, err


@pytest.mark.parametrize("band, message", [
    # once accepted: rank 1 printed as 5.156 [4.884-27171232342768135176192.000] ms
    ({"0.8": 50.0}, "band halfwidth 0.8: 50 is more than 2.303 (ln 10"),
    ({"0.95": 60.0}, "band halfwidth 0.95: 60 is more than 2.303"),
    ({"0.95": 2.31}, "band halfwidth 0.95: 2.31 is more than 2.303"),
    (dict(n=10_000), "band.n: 10000 is more than the post's "),
    (dict(n=0), "band.n: 0 is outside [1, inf]"),
])
def test_a_band_wider_than_any_fit_gives_is_refused_at_the_door(tmp_path, capsys, monkeypatch, band, message):
    refuses_before_work(monkeypatch)
    write_run(tmp_path / "results", band=band)
    assert cli.main(["1024x1024x1024", "--results", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "timing_model.json: " + message in err, err


def test_the_widest_band_a_run_may_write_is_read_back(tmp_path):
    """The bounds refuse only what no fit gives: the edge itself is read."""
    widest = {"0.8": intervals.MAX_HALFWIDTH, "n": advisor_model.published_points()}
    write_run(tmp_path / "results", band=widest)
    model, why = advisor_model.from_results(tmp_path / "results")
    assert model is not None, why
    assert model.band.halfwidth[0.8] == pytest.approx(intervals.MAX_HALFWIDTH)


def model_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TPU_MATMUL_REPRO_CACHE", str(tmp_path / "cache"))
    fits = []
    monkeypatch.setattr(advisor_model, "fitted", lambda config: fits.append(1) or dataclasses.replace(
        MODEL, source="fitted"))
    versions = {"jax_version": "x", "libtpu_version": "y"}
    return (lambda: advisor_model.load({}, None, versions)), fits


def test_a_flipped_digit_in_the_advisor_s_cached_fit_is_fitted_again(tmp_path, monkeypatch, caplog):
    """A plausible flip (a constant within the fit's bounds, a half-width within its) passed every check
    of the value; the entry's digest catches it, and the answer is the intact fit's."""
    load, fits = model_cache(tmp_path, monkeypatch)
    first = load()
    (path,) = (tmp_path / "cache" / "advise").glob("model-*.json")
    entry = json.loads(path.read_text())
    assert integrity.DIGEST in entry
    text = path.read_text()
    q = repr(entry["halfwidth"]["0.8"])
    path.write_text(text.replace(q, repr(entry["halfwidth"]["0.8"] * 1.5), 1))
    again = load()
    assert len(fits) == 2 and again.band == first.band and again.constants == first.constants
    assert "is damaged (its content does not match its sha256: changed since" in caplog.text
    assert path.name in caplog.text
    assert load().band == first.band and len(fits) == 2  # stored again, sound


def test_a_cached_fit_beyond_the_bounds_is_fitted_again_even_sealed(tmp_path, monkeypatch, caplog):
    load, fits = model_cache(tmp_path, monkeypatch)
    load()
    (path,) = (tmp_path / "cache" / "advise").glob("model-*.json")
    entry = integrity.unsealed(path.read_text())
    entry["halfwidth"]["0.8"] = 50.0
    path.write_text(integrity.sealed(entry))
    load()
    assert len(fits) == 2 and "a half-width that no band has" in caplog.text


def test_an_entry_is_sealed_over_its_values_not_its_layout():
    entry = {"b": [1, 2.5, None], "a": {"x": "y"}}
    text = integrity.sealed(entry)
    assert integrity.unsealed(text) == entry
    assert integrity.unsealed(json.dumps(json.loads(text), indent=3)) == entry  # spacing is not content
    with pytest.raises(ValueError, match="does not match"):
        integrity.unsealed(text.replace("2.5", "3.5"))
    with pytest.raises(integrity.Unsealed):
        integrity.unsealed(json.dumps(entry))


def test_a_file_that_grows_past_its_limit_while_read_is_refused(tmp_path, monkeypatch):
    """The size is checked on the open file and again on what was read (a /proc file says 0 bytes)."""
    path = tmp_path / "f.yaml"
    path.write_text("a: 1\n")
    monkeypatch.setitem(reading.LIMITS, "config file", 3)
    with pytest.raises(reading.ReadError, match="f.yaml: 5 bytes, more than the 3 bytes a config file may"):
        reading.read_text(path, "config file")
    assert reading.read_text("/proc/self/status", "cache entry").startswith("Name:")
    monkeypatch.setitem(reading.LIMITS, "cache entry", 8)
    with pytest.raises(reading.ReadError, match="more than 8 bytes once read"):
        reading.read_text("/proc/self/status", "cache entry")


def test_every_kind_has_a_limit_and_an_unknown_kind_is_a_programming_error():
    assert all(isinstance(v, int) and v > 0 for v in reading.LIMITS.values())
    with pytest.raises(KeyError):
        reading.read_text(__file__, "poem")
    assert math.isfinite(intervals.MAX_HALFWIDTH)


@pytest.mark.parametrize("what, why", [
    ("fifo", "x.parquet: a FIFO (named pipe), not a carried file"),
    ("folder", "x.parquet: a folder, not a carried file"),
    ("dev/zero", "x.parquet: a character device, not a carried file"),
    ("large", "x.parquet: 2147483648 bytes, more than the 512 MiB a carried file may hold"),
])
def test_a_carried_file_is_checked_by_type_and_size_before_parquet_reads_it(tmp_path, what, why):
    """A FIFO in data/measured/ once hung every Snakemake start (the plan reads its targets), /dev/zero
    filled memory."""
    from tpu_matmul_repro.analysis.aggregate import load_measured
    from tpu_matmul_repro.experiments.core.schema import DataError, check_measured
    from tpu_matmul_repro.experiments.plan.plan import known_targets

    (tmp_path / "x.parquet").symlink_to(hostile(tmp_path, what))
    path = tmp_path / "x.parquet"
    with pytest.raises(DataError) as e:
        check_measured(path, min_samples=5, max_rows=100, tolerance={})
    assert str(e.value).endswith(why) and "\n" not in str(e.value), str(e.value)
    with pytest.raises(DataError, match=re.escape(why)):
        load_measured([path])
    assert known_targets([], [path]) == []  # its check job says why


def test_the_configfiles_of_a_snakemake_command_line_are_found_in_each_spelling():
    from tpu_matmul_repro.experiments.plan.config import configfiles_of

    argv = ["--cores", "1", "--configfile", "a.yaml", "b.yaml", "-n", "--configfiles=c.yaml", "all",
            "--configfiles", "d.yaml", "--config", "x=1"]
    assert configfiles_of(argv) == ["a.yaml", "b.yaml", "c.yaml", "d.yaml"]


BAD_CONFIGFILES = {  # content, and what the one line says after the file's name
    "list.yaml": (b"- targets\n- v5e\n", ": a config file holds a mapping of keys, not a list"),
    "empty.yaml": (b"", ": empty; a config file holds a mapping of keys"),
    "broken.yaml": (b"targets: [v5e\n", ":2:1: did not find expected ',' or ']'"),
    "latin1.yaml": (b"label: caf\xe9\n", ": not UTF-8 text: byte 0xE9 at byte offset 10 (line 1)"),
    "deep.yaml": (b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n", ":1:"),
    "missing.yaml": (None, ": cannot be read: No such file or directory"),
    # found by the fuzz tests: PyYAML's reader error spans two lines
    "nul.yaml": (b"\x00", ": not valid YAML: control characters are not allowed (character 0)"),
}


@pytest.mark.parametrize("name", list(BAD_CONFIGFILES))
def test_a_bad_configfile_is_one_line_naming_it(tmp_path, capsys, name):
    from tpu_matmul_repro.experiments.plan.config import check_configfiles

    content, says = BAD_CONFIGFILES[name]
    if content is not None:
        (tmp_path / name).write_bytes(content)
    with pytest.raises(SystemExit) as e:
        check_configfiles(["--cores", "1", "--configfile", str(tmp_path / name)])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 1 and err.startswith(f"--configfile {tmp_path / name}{says}"), err
    assert len(err.splitlines()) == 1


@pytest.mark.slow
def test_snakemake_names_a_bad_configfile_before_it_reads_it(tmp_path):
    """Snakemake's command line reads each --configfile before the Snakefile runs: a missing one was a
    FileNotFoundError traceback, a list one 'Config file must be given as JSON or YAML with keys at top
    level.', a latin-1 one a UnicodeDecodeError traceback, none naming the file. The workflow's default
    profile checks them first: those three kinds through Snakemake, every kind's message in process
    (test_a_bad_configfile_is_one_line_naming_it: the same check)."""
    import subprocess
    import sys

    from test_advise import ROOT

    for name in ("missing.yaml", "list.yaml", "latin1.yaml"):
        content, says = BAD_CONFIGFILES[name]
        if content is not None:
            (tmp_path / name).write_bytes(content)
        run = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile",
                              str(tmp_path / name)], cwd=ROOT, capture_output=True, text=True, timeout=300)
        lines = [line for line in (run.stdout + run.stderr).splitlines()
                 if not line.startswith("Using workflow specific profile")]
        assert run.returncode == 1 and len(lines) == 1, run.stdout + run.stderr
        assert lines[0].startswith(f"--configfile {tmp_path / name}{says}"), lines


def _job(**fields):
    """A compile job from the fields Job has (its optional ones change as the study does)."""
    from tpu_matmul_repro.experiments.core.jobs import Job

    return Job(**{k: v for k, v in fields.items() if k in {f.name for f in dataclasses.fields(Job)}})


def _flip_xla_cycles(cache_root) -> str:
    """Change the first digit of est_cycles in XLA's entry (up, so it stays above the chip's peak)."""
    (entry,) = [p for p in cache_root.rglob("*.json")
                if json.loads(p.read_text()).get("case", {}).get("kernel") == "xla"]  # not traffic/'s
    text = entry.read_text()
    cycles = json.loads(text)["result"]["est_cycles"]
    flipped = int(str(int(str(cycles)[0]) % 9 + 1) + str(cycles)[1:])
    assert flipped > cycles and text.count(f'"est_cycles": {cycles}') == 1
    entry.write_text(text.replace(f'"est_cycles": {cycles}', f'"est_cycles": {flipped}'))
    return str(entry)


@pytest.mark.compiler
def test_a_flipped_digit_in_a_compile_entry_is_compiled_again_by_the_pipeline(tmp_path, monkeypatch, caplog):
    """The compile job reading a cache entry whose est_cycles lost a bit (a whole, physical number):
    once published in matmul.parquet as it was; now compiled again, the intact rows."""
    from tpu_matmul_repro.experiments.compile_study.study import run_job
    from tpu_matmul_repro.experiments.core.cases import Case

    monkeypatch.setenv("TPU_MATMUL_REPRO_CACHE", str(tmp_path / "cache"))
    job = _job(target="v5e", experiment="xla", cases=(Case("xla", "bfloat16", 1024, 1024, 1024),),
               timeout_s=300, profile_max_steps=16)
    first = run_job(job)
    entry = _flip_xla_cycles(tmp_path / "cache")
    with caplog.at_level("WARNING"):
        again = run_job(job)
    assert f"{entry} is corrupt (its content does not match its sha256" in caplog.text
    pd.testing.assert_frame_equal(first.drop(columns=["git_sha", "compile_s"]),
                                  again.drop(columns=["git_sha", "compile_s"]))


@pytest.mark.compiler
@pytest.mark.slow
def test_a_flipped_digit_in_xla_s_entry_is_compiled_again_by_the_advisor(tmp_path, monkeypatch, capsys,
                                                                            caplog):
    """XLA's row moved from 193 to 188 TFLOP/s, silently, when its entry's cycles lost a bit; now the
    advisor's answer is the intact one, and it says which entry it compiled again."""
    monkeypatch.setenv("TPU_MATMUL_REPRO_CACHE", str(tmp_path / "cache"))
    write_run(tmp_path / "results")
    argv = ["512x512x512", "--results", str(tmp_path / "results"), "--json"]
    assert cli.main(argv) == 0
    first = pd.DataFrame(json.loads(capsys.readouterr().out))
    entry = _flip_xla_cycles(tmp_path / "cache")
    with caplog.at_level("WARNING"):  # the advisor's log, on stderr outside pytest
        assert cli.main(argv) == 0
    again = pd.DataFrame(json.loads(capsys.readouterr().out))
    assert f"{entry} is corrupt (its content does not match its sha256" in caplog.text
    timed = ["kernel", "bm", "bk", "bn", "model_device_ms", "model_device_ms_hi80"]
    pd.testing.assert_frame_equal(first[timed], again[timed])
