"""Where the compile and output caches live: one variable, read in one place (cache_dirs)."""
from pathlib import Path

import pytest

from tpu_matmul_repro.experiments.compile_study import cache as compile_cache
from tpu_matmul_repro.experiments.core import output_cache
from tpu_matmul_repro.experiments.core.cache_dirs import CACHE_VARIABLE


def test_the_variable_names_the_compile_cache_and_holds_the_output_cache(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_VARIABLE, str(tmp_path / "caches"))
    assert compile_cache.cache_root() == tmp_path / "caches"
    assert output_cache.cache_root() == tmp_path / "caches" / "outputs"


@pytest.mark.parametrize("value", ["off", "OFF", " no ", "0", "false", ""])
def test_off_turns_both_caches_off(monkeypatch, value):
    monkeypatch.setenv(CACHE_VARIABLE, value)
    assert compile_cache.cache_root() is None
    assert output_cache.cache_root() is None


def test_unset_means_the_user_cache_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(CACHE_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compile_cache.cache_root() == Path(tmp_path) / "tpu-matmul-repro" / "compile"
    assert output_cache.cache_root() == Path(tmp_path) / "tpu-matmul-repro" / "outputs"
