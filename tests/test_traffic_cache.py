"""Traffic summaries kept on disk: the same numbers as counting, and a process that finds them imports
no kernel module and no jax."""
import dataclasses
import json
import os
import subprocess
import sys

import pytest

from tpu_matmul_repro.experiments.core import traffic_cache
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.traffic import hbm_bytes, windows

CASES = [Case("v3", "float32", 1024, 2048, 512, 128, 256, 128),
         Case("v5", "bfloat16", 1024, 512, 1024, 256, 512, 256),
         Case("v5", "int8", 512, 1024, 2048, 512, 256, 1024),
         Case("v2", "float32", 1024, 1024, 1024, 256, 1024, 256)]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TPU_MATMUL_REPRO_CACHE", str(tmp_path))
    traffic_cache.cached_windows.cache_clear()
    yield tmp_path / "traffic"
    traffic_cache.cached_windows.cache_clear()


@pytest.mark.parametrize("case", CASES)
def test_kept_and_read_back_as_counted(cache, case):
    counted = windows(case)
    assert traffic_cache.cached_windows(case) == counted  # counted, and kept
    assert len(list(cache.rglob("*.json"))) == 1
    traffic_cache.cached_windows.cache_clear()
    assert traffic_cache.cached_windows(case) == counted  # read back
    assert traffic_cache.cached_hbm_bytes(case) == hbm_bytes(case) == counted.total_bytes
    assert counted.steps == sum(counted.window_counts)


def test_an_entry_changed_on_disk_is_counted_again(cache):
    case = CASES[0]
    counted = traffic_cache.cached_windows(case)
    (path,) = cache.rglob("*.json")
    entry = json.loads(path.read_text())
    entry["total_bytes"] += 1  # a plausible number, but not the one sealed
    path.write_text(json.dumps(entry))
    traffic_cache.cached_windows.cache_clear()
    assert traffic_cache.cached_windows(case) == counted
    assert json.loads(path.read_text())["total_bytes"] == counted.total_bytes  # rewritten


def test_turned_off_it_counts_and_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("TPU_MATMUL_REPRO_CACHE", "off")
    traffic_cache.cached_windows.cache_clear()
    assert traffic_cache.cached_windows(CASES[1]) == windows(CASES[1])
    traffic_cache.cached_windows.cache_clear()


def test_a_process_that_finds_them_imports_no_jax(tmp_path):
    env = dict(os.environ, TPU_MATMUL_REPRO_CACHE=str(tmp_path))
    cases = json.dumps([dataclasses.astuple(c) for c in CASES])
    script = "\n".join([
        "import json, sys",
        "from tpu_matmul_repro.experiments.core.cases import Case",
        "from tpu_matmul_repro.experiments.core.traffic_cache import cached_windows",
        f"print(json.dumps([cached_windows(Case(*c)).total_bytes for c in json.loads({cases!r})]))",
        "print('jax' in sys.modules)"])
    def run():
        return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                              check=True)

    first, second = run(), run()
    expected = [hbm_bytes(c) for c in CASES]
    assert [json.loads(first.stdout.splitlines()[0]), first.stdout.splitlines()[1]] == [expected, "True"]
    assert [json.loads(second.stdout.splitlines()[0]), second.stdout.splitlines()[1]] == [expected, "False"]
