"""The output cache: a job whose inputs, params, config and software are unchanged gets its outputs back
byte for byte without running; any change, a corrupt entry or a disabled cache runs it. (The tiny run
made again and then copied back whole, byte for byte: tests/test_workflow.py, after its interruptions.)"""
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from tpu_matmul_repro.experiments.core import output_cache
from tpu_matmul_repro.experiments.core.cache_dirs import CACHE_VARIABLE

LOG = logging.getLogger("test")


class Params(dict):
    """Like Snakemake's params: attributes and items()."""

    __getattr__ = dict.__getitem__


@pytest.fixture
def job(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_VARIABLE, str(tmp_path / "cache"))
    (tmp_path / "table.csv").write_text("a,b\n1,2\n")
    sm = SimpleNamespace(rule="figures", input=[str(tmp_path / "table.csv")],
                         output=[str(tmp_path / "out" / "f.png"), str(tmp_path / "out" / "f.pdf")],
                         params=Params(spec="v5_bfloat16_v5e", code="abc"), config={"targets": ["v5e"]})
    runs = []

    def make():
        runs.append(1)
        for i, path in enumerate(sm.output):
            (tmp_path / "out").mkdir(exist_ok=True)
            with open(path, "w") as f:
                f.write(f"output {i} of run {len(runs)} from {open(sm.input[0]).read()!r}")

    def run(extra=None):
        output_cache.reuse_or_make(sm, make, LOG, extra=extra)
        return [open(p).read() for p in sm.output]

    return SimpleNamespace(sm=sm, runs=runs, run=run, tmp=tmp_path)


def test_unchanged_job_is_copied_back(job):
    first = job.run()
    for path in job.sm.output:  # results/ deleted
        (job.tmp / "out" / path.split("/")[-1]).unlink()
    assert job.run() == first and len(job.runs) == 1


@pytest.mark.parametrize("change", ["input", "params", "config", "software", "environment"])
def test_any_change_runs_the_job(job, change, monkeypatch):
    job.run()
    if change == "input":
        (job.tmp / "table.csv").write_text("a,b\n1,3\n")
    elif change == "params":
        job.sm.params["code"] = "abd"
    elif change == "config":
        job.sm.config["targets"] = ["v5e", "v6e"]
    elif change == "environment":  # e.g. JAX_ENABLE_X64 changes what the correctness jobs compute
        monkeypatch.setenv("JAX_ENABLE_X64", "1")
    else:
        real = output_cache.software()
        monkeypatch.setattr(output_cache, "software", lambda: [*real, "matplotlib==0.0"])
    second = job.run()
    assert len(job.runs) == 2 and "run 2" in second[0]


def test_a_corrupt_entry_is_made_again_and_replaced(job):
    job.run()
    entries = [p for p in (job.tmp / "cache" / "outputs").rglob("0") if p.is_file()]
    assert len(entries) == 1
    entries[0].write_text("tampered")
    assert "run 2" in job.run()[0] and len(job.runs) == 2
    assert "run 2" in job.run()[0] and len(job.runs) == 2  # the replaced entry is sound


def _manifest(job) -> Path:
    (manifest,) = (job.tmp / "cache" / "outputs").rglob("manifest.json")
    return manifest


@pytest.mark.parametrize("damage, why", [
    # one digit of an output changed (a figure's number, a row of a table): its file's sha256 differs
    (lambda entry: (entry / "0").write_text((entry / "0").read_text().replace("run 1", "run 7")),
     "file 0 (f.png) does not match its sha256"),
    # one digit of the manifest changed: the manifest's own digest differs
    (lambda entry: (entry / "manifest.json").write_text(
        (entry / "manifest.json").read_text().replace('"f.pdf"', '"f.pdg"')),
     "its content does not match its sha256"),
    (lambda entry: (entry / "manifest.json").write_text("[1, 2]"), "a JSON list, not an entry"),
    (lambda entry: (entry / "manifest.json").write_bytes(b"\xff"),
     "not UTF-8 text: byte 0xFF at byte offset 0"),
])
def test_a_changed_entry_is_a_miss_with_one_warning_naming_it(job, damage, why, caplog):
    job.run()
    entry = _manifest(job).parent
    damage(entry)
    with caplog.at_level(logging.WARNING):
        assert "run 2" in job.run()[0] and len(job.runs) == 2
    assert caplog.text.count("output cache: entry") == 1 and str(entry) in caplog.text and why in caplog.text
    assert "run 2" in job.run()[0] and len(job.runs) == 2  # stored again, sound


def test_an_entry_without_a_digest_is_made_again_and_stored_with_one(job, caplog):
    """A manifest written before manifests carried their own digest: its files' sha256 alone no longer
    vouch for it; the job runs once more and its entry is stored sealed."""
    import json

    job.run()
    manifest = _manifest(job)
    old = json.loads(manifest.read_text())
    del old["sha256"]
    manifest.write_text(json.dumps(old))
    with caplog.at_level(logging.WARNING):
        assert "run 2" in job.run()[0]
    assert "has no digest" in caplog.text
    assert "sha256" in json.loads(_manifest(job).read_text()) and "run 2" in job.run()[0]


def test_disabled_cache_always_runs_and_stores_nothing(job, monkeypatch):
    monkeypatch.setenv(CACHE_VARIABLE, "off")
    job.run(), job.run()
    assert len(job.runs) == 2 and not (job.tmp / "cache").exists()


def test_a_failed_job_stores_nothing(job):
    def fail():
        raise RuntimeError("kernel crashed")

    with pytest.raises(RuntimeError):
        output_cache.reuse_or_make(job.sm, fail, LOG)
    assert not any(p.is_file() for p in (job.tmp / "cache").rglob("*"))


def test_extra_inputs_are_part_of_the_key(job):
    """What a script reads besides its inputs (the report's date) goes into the key as `extra`."""
    job.run(extra={"date": "2026-12-01"})
    job.run(extra={"date": "2026-12-02"})
    assert len(job.runs) == 2


def test_a_cache_that_cannot_store_does_not_fail_the_job(job, monkeypatch, caplog):
    """The outputs are made already: a cache folder that is a file (or full, or raced) only logs."""
    (job.tmp / "cache").write_text("not a folder")
    with caplog.at_level(logging.WARNING):
        assert "run 1" in job.run()[0]
    assert "not stored" in caplog.text


def test_a_racing_store_of_the_same_key_does_not_fail(job, monkeypatch, caplog):
    """Another job stores the same entry between this one's removal of a corrupt entry and its rename."""
    job.run()
    real_replace = output_cache.os.replace

    def raced(src, dst):
        raise OSError(39, "Directory not empty")

    monkeypatch.setattr(output_cache.os, "replace", raced)
    entry = next(p for p in (job.tmp / "cache" / "outputs").rglob("manifest.json")).parent
    (entry / "0").write_text("tampered")
    with caplog.at_level(logging.WARNING):
        assert "run 2" in job.run()[0]
    monkeypatch.setattr(output_cache.os, "replace", real_replace)
    assert "not stored" in caplog.text
