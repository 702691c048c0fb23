"""Pallas grids' traffic summaries (traffic.windows) kept on disk beside the compile cache, so a warm
process imports neither the kernels nor jax (docs/reproducibility.md, "Caches").
"""
import dataclasses
import functools
import hashlib
import json

from tpu_matmul_repro.experiments.core import integrity
from tpu_matmul_repro.experiments.core.atomic_write import write_text_atomic
from tpu_matmul_repro.experiments.core.cache_dirs import cache_folder
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.traffic import Windows, hbm_bytes, windows
from tpu_matmul_repro.kernels.spec import WHOLE


@functools.cache
def _code_digest() -> str:
    from tpu_matmul_repro.experiments.core.code_inputs import ROOT, closure, digest

    return digest(closure(ROOT / "experiments" / "core" / "traffic.py", ROOT), ROOT, semantic=True)


@functools.lru_cache(maxsize=4096)
def cached_windows(case: Case) -> Windows:
    """traffic.windows(case), from the disk cache where it holds the case, else counted and kept."""
    root = cache_folder("traffic")
    if root is None:
        return windows(case)
    what = dict(case=dataclasses.asdict(case), code=_code_digest())
    key = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()
    path = root / key[:2] / f"{key}.json"
    try:
        entry = integrity.unsealed(path.read_text())
        if entry["key"] == what:
            return Windows(**{f.name: _tuple(entry[f.name]) for f in dataclasses.fields(Windows)})
    except (OSError, ValueError, KeyError, TypeError):
        pass  # absent, or not as written: counted again below
    out = windows(case)
    try:
        write_text_atomic(integrity.sealed(dict(dataclasses.asdict(out), key=what)), path, shared=True)
    except OSError:
        pass  # a read-only cache still answers, only slower
    return out


def _tuple(value):
    return tuple(value) if isinstance(value, list) else value


def cached_hbm_bytes(case: Case) -> int:
    """traffic.hbm_bytes(case), a grid's from the disk cache (their sum of copies is the same count)."""
    return hbm_bytes(case) if case.facts.grid == WHOLE else cached_windows(case).total_bytes
