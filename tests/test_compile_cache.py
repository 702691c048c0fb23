"""The compile cache as a cache: an entry is trusted only if it is sound for its key and its content
matches its digest, a writer never disturbs another's, and a cache that cannot be written leaves the run
going, uncached (issue 29)."""
import copy
import dataclasses
import json
import logging
import multiprocessing

import pytest

from tpu_matmul_repro.experiments.compile_study.cache import CompileCache
from tpu_matmul_repro.experiments.core import integrity
from tpu_matmul_repro.experiments.core.cases import Case

CASE = Case("v5", "bfloat16", 2048, 2048, 2048, 512, 1024, 1024)
# A sound result: est_cycles above what v5e's peak allows for 2048^3 in bf16 (about 131k cycles)
SOUND = dict(status="ok", vmem_bytes=9 << 20, oom_limit_bytes=None, est_cycles=400_000, error="",
             compile_s=1.5, prefetched=0)


def cache(root) -> CompileCache:
    return CompileCache(root, dict(target="v5e", profile=True, versions={}, code="test"))


def entry_of(c: CompileCache, result: dict, case=CASE) -> dict:
    """An entry as put() writes it, before it is sealed."""
    return copy.deepcopy(dict(key=c.key(case, None), context=c.context, case=dataclasses.asdict(case),
                              vmem_limit_bytes=None, compiler_options=None, result=result))


def write_entry(c: CompileCache, text: str, case=CASE):
    path = c._path(c.key(case, None))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_sound_entry_comes_back(tmp_path):
    c = cache(tmp_path)
    c.put(CASE, None, SOUND)
    assert c.get(CASE, None) == SOUND and c.hits == 1


def test_a_compile_with_options_of_its_own_has_its_own_entry(tmp_path):
    c = cache(tmp_path)
    options = {"xla_gf_vmem_memory_space_assignment": False}
    c.put(CASE, None, SOUND, options)
    assert c.get(CASE, None) is None and c.get(CASE, None, options) == SOUND
    assert c.key(CASE, None, {}) == c.key(CASE, None)  # no options: the key it always had


@pytest.mark.parametrize("change, why", [
    (dict(est_cycles="abc"), "est_cycles='abc' is not a positive whole number"),
    (dict(vmem_bytes=-5), "vmem_bytes=-5 is not a positive whole number"),
    (dict(vmem_bytes=1.5), "vmem_bytes=1.5 is not a positive whole number"),
    (dict(vmem_bytes=True), "vmem_bytes=True is not a positive whole number"),
    (dict(vmem_bytes=1, est_cycles=7), "est_cycles=7 is faster than v5e's peak allows"),
    (dict(compile_s=float("nan")), "compile_s=nan is not a finite number"),
    (dict(status="timeout"), "status 'timeout' is not a deterministic outcome"),
    (dict(error=None), "error=None is not text"),
    (dict(prefetched=3), "prefetched=3 is not a count of the kernel's two operands"),
    (dict(prefetched=True), "prefetched=True is not a count"),
    (dict(vmem_bytes=None, est_cycles=None), "an ok compile without VMEM bytes or cycles"),
    # issue 39: 1 TB of VMEM on a 128 MiB chip, ranked first by the advisor; an out-of-VMEM verdict for
    # a request (12.8 MiB) under its limit (16 MiB), which re-ranked the answer
    (dict(vmem_bytes=10**12), "vmem_bytes=1000000000000 is more than v5e's physical VMEM (134217728 bytes"),
    (dict(status="vmem_oom", vmem_bytes=13421772, oom_limit_bytes=16 << 20, est_cycles=None),
     "an out-of-VMEM verdict for vmem_bytes=13421772, which is not above its limit"),
    (dict(status="vmem_oom", vmem_bytes=None, oom_limit_bytes=1 << 40, est_cycles=None),
     "oom_limit_bytes=1099511627776 is more than v5e's physical VMEM"),
])
def test_an_entry_that_cannot_be_right_is_recomputed(tmp_path, change, why, caplog):
    """Well-formed JSON with impossible values: once trusted (a crash in the XLA job, negative bytes in
    the table, 240 TFLOP/s for v5e), now a miss whose warning says why."""
    c = cache(tmp_path)
    write_entry(c, integrity.sealed(entry_of(c, SOUND | change)))  # its digest intact: the values are wrong
    with caplog.at_level(logging.WARNING):
        assert c.get(CASE, None) is None
    assert c.corrupt == 1 and why in caplog.text and caplog.text.count("compiling again") == 1
    c.put(CASE, None, SOUND | change)  # the compiler's own result is not kept either when unsound
    assert c.get(CASE, None) is None
    c.put(CASE, None, SOUND)
    assert c.get(CASE, None) == SOUND
    from tpu_matmul_repro.experiments.compile_study.cache import problem

    assert problem(SOUND | change, CASE, "v5e").startswith(why)


def test_an_out_of_vmem_verdict_above_its_limit_is_trusted_whatever_it_asked(tmp_path):
    """The physical bound is on VMEM used: a refused request may ask more than the chip has."""
    c = cache(tmp_path)
    for asked in (17 << 20, 10**12):
        oom = dict(SOUND, status="vmem_oom", vmem_bytes=asked, oom_limit_bytes=16 << 20, est_cycles=None)
        c.put(CASE, asked, oom)
        assert c.get(CASE, asked) == oom


def test_a_folder_in_place_of_an_entry_is_recomputed(tmp_path):
    c = cache(tmp_path)
    path = c._path(c.key(CASE, None))
    (path / "inside").mkdir(parents=True)
    assert c.get(CASE, None) is None
    c.put(CASE, None, SOUND)  # once IsADirectoryError, which failed the compile job
    assert path.is_file() and c.get(CASE, None) == SOUND


def test_a_cache_that_cannot_be_written_is_said_once_and_the_run_goes_on(tmp_path, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    c, other = cache(blocker / "compile"), cache(blocker / "compile")  # the study's two caches
    with caplog.at_level(logging.WARNING):
        for case in (CASE, Case("v5", "bfloat16", 4096, 4096, 4096, 512, 1024, 1024)):
            c.put(case, None, SOUND | dict(est_cycles=10**7))
            other.put(case, None, SOUND | dict(est_cycles=10**7))
            assert c.get(case, None) is None
    assert caplog.text.count("cannot write to") == 1 and "compiles without caching" in caplog.text


def _put_many(args):
    root, n = args
    c, failures = cache(root), 0
    for _ in range(n):
        try:
            c.put(CASE, None, SOUND)
        except OSError:
            failures += 1
    return failures


def test_concurrent_writers_of_one_entry_do_not_disturb_each_other(tmp_path):
    """Several processes putting the same entry at once: each had removed the others' temporary file
    (FileNotFoundError in about a quarter of the puts). Spawned, not forked: this worker may have jax
    loaded, whose threads a fork would copy mid-flight."""
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        failures = pool.map(_put_many, [(tmp_path, 300)] * 4)
    assert failures == [0, 0, 0, 0]
    assert cache(tmp_path).get(CASE, None) == SOUND
    assert not list(tmp_path.rglob("*.tmp"))  # every writer renamed its own file into place


def test_a_flipped_digit_that_passes_the_physics_is_caught_by_the_digest(tmp_path, caplog):
    """est_cycles 400000 read as 600000: a whole, positive count above the peak's bound, valid JSON, the
    same key. Before entries carried a digest it was trusted, and published."""
    c = cache(tmp_path)
    c.put(CASE, None, SOUND)
    path = c._path(c.key(CASE, None))
    text = path.read_text()
    assert text.count('"est_cycles": 400000') == 1
    path.write_text(text.replace('"est_cycles": 400000', '"est_cycles": 600000'))
    with caplog.at_level(logging.WARNING):
        assert c.get(CASE, None) is None
    assert c.corrupt == 1 and caplog.text.count(str(path)) == 1 and "does not match its sha256" in caplog.text
    c.put(CASE, None, SOUND)  # compiled again: the entry is rewritten whole
    assert c.get(CASE, None) == SOUND


@pytest.mark.parametrize("edit", [
    lambda e: e["case"].update(m=4096),  # the inputs of its key changed, its key and digest not
    lambda e: e["context"].update(target="v6e"),
    lambda e: e.update(vmem_limit_bytes=32 << 20),
])
def test_an_entry_whose_inputs_are_not_this_compile_s_is_a_miss(tmp_path, edit, caplog):
    c = cache(tmp_path)
    entry = entry_of(c, SOUND)
    edit(entry)
    write_entry(c, integrity.sealed(entry))
    with caplog.at_level(logging.WARNING):
        assert c.get(CASE, None) is None
    assert "its inputs are not this compile's" in caplog.text


def test_entries_without_a_digest_are_compiled_again_and_said_once(tmp_path, caplog):
    """An earlier version's entries (no digest) are misses: compiled again and rewritten sealed, with
    one warning for the cache, not one for each of its hundreds of entries."""
    c = cache(tmp_path)
    other = Case("v5", "bfloat16", 4096, 4096, 4096, 512, 1024, 1024)
    for case in (CASE, other):
        write_entry(c, json.dumps(entry_of(c, SOUND, case), sort_keys=True), case)
    with caplog.at_level(logging.WARNING):
        assert c.get(CASE, None) is None and c.get(other, None) is None
    assert caplog.text.count("without a digest") == 1 and c.corrupt == 0 and c.misses == 2
    c.put(CASE, None, SOUND)
    assert integrity.DIGEST in json.loads(c._path(c.key(CASE, None)).read_text())
    assert c.get(CASE, None) == SOUND


@pytest.mark.parametrize("make, why", [
    (lambda p: p.write_text(" " * (2 << 20)), "more than the 1 MiB a cache entry may hold"),
    (lambda p: __import__("os").mkfifo(p), "a FIFO (named pipe), not a cache entry"),
    (lambda p: p.write_bytes(b'{"key": "caf\xe9"}'), "not UTF-8 text: byte 0xE9 at byte offset 12"),
])
def test_an_entry_that_is_not_a_small_text_file_is_a_miss(tmp_path, make, why, caplog):
    c = cache(tmp_path)
    path = c._path(c.key(CASE, None))
    path.parent.mkdir(parents=True)
    make(path)
    with caplog.at_level(logging.WARNING):
        assert c.get(CASE, None) is None  # a FIFO read without a writer would have waited forever
    assert why in caplog.text and c.corrupt == 1
