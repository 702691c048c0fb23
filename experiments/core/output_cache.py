"""A content-addressed cache of the outputs of jobs whose outputs follow from their inputs alone
(figures, the report, correctness rows): docs/reproducibility.md, "Caches".
"""
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from tpu_matmul_repro.experiments.core import integrity, reading
from tpu_matmul_repro.experiments.core.cache_dirs import cache_folder
from tpu_matmul_repro.experiments.core.runtime import logged

log = logging.getLogger(__name__)

FORMAT = 2  # bump when an entry's layout or the key's parts change


def cache_root() -> Path | None:
    """$TPU_MATMUL_REPRO_CACHE/outputs, else the user's cache folder; None when caches are off."""
    return cache_folder("outputs")


def file_digest(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def software() -> list[str]:
    """Every installed distribution and version, and the Python: a package upgrade changes outputs."""
    installed = {(d.metadata["Name"] or "").lower(): d.version for d in metadata.distributions()}
    return [sys.version, *(f"{name}=={version}" for name, version in sorted(installed.items()))]


# Environment variables that change what jax, XLA and libtpu compute (JAX_ENABLE_X64, XLA_FLAGS, ...)
ENVIRONMENT_PREFIXES = ("JAX_", "XLA_", "LIBTPU_")


def environment() -> dict:
    return {name: value for name, value in sorted(os.environ.items())
            if name.startswith(ENVIRONMENT_PREFIXES)}


def key_parts(rule: str, inputs, params: dict, config: dict, outputs, extra: dict | None = None) -> dict:
    """What a job's outputs follow from: rule, input contents, params, config, software, jax's, XLA's and
    libtpu's environment variables, output names and `extra` (what else the script reads); JSON values."""
    return dict(format=FORMAT, rule=rule, inputs=[file_digest(p) for p in inputs],
                params=params, config=config, software=software(), environment=environment(),
                outputs=[Path(p).name for p in outputs], extra=extra or {})


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def parts_line(parts: dict) -> str:
    """Each part's short digest, for the log: two runs' logs side by side say which part made a miss
    (each input file's own digest, so the input that changed is named)."""
    inputs = " ".join(d[:8] for d in parts["inputs"])
    params = " ".join(f"{name}={_digest(value)[:8]}" for name, value in sorted(parts["params"].items()))
    rest = " ".join(f"{name}={_digest(parts[name])[:8]}"
                    for name in ("config", "software", "environment", "outputs", "extra"))
    return f"inputs=[{inputs}] params=[{params}] {rest}"


class OutputCache:
    def __init__(self, root: Path):
        self.root = Path(root)

    def _entry(self, key: str) -> Path:
        return self.root / key[:2] / key

    def restore(self, key: str, outputs) -> bool:
        """Copy the entry's files to `outputs` (each atomically); False when there is no sound entry."""
        from tpu_matmul_repro.experiments.core.atomic_write import write_atomic

        entry = self._entry(key)
        manifest_path = entry / "manifest.json"
        if not manifest_path.exists():
            return False
        try:
            manifest = integrity.unsealed(reading.read_text(manifest_path, "cache entry"))
            files = manifest["files"]
            if manifest["key"] != key:
                raise ValueError(f"its key is {str(manifest['key'])[:16]}, not this job's")
            if len(files) != len(outputs):
                raise ValueError(f"{len(files)} files, not the job's {len(outputs)}")
            for i, f in enumerate(files):
                if file_digest(entry / str(i)) != f["sha256"]:
                    raise ValueError(f"file {i} ({f['name']}) does not match its sha256")
        except integrity.Unsealed:  # an earlier version's entry: made again, stored sealed
            log.warning("output cache: entry %s has no digest (written before entries carried one); "
                        "running the job", entry)
            return False
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.warning("output cache: entry %s is damaged (%s); running the job", entry, e)
            return False
        try:
            for i, out in enumerate(outputs):
                write_atomic(out, lambda tmp, src=entry / str(i): shutil.copyfile(src, tmp))
        except OSError as e:  # e.g. an entry removed meanwhile: make the outputs instead
            log.warning("output cache: could not copy entry %s (%s); running the job", key[:16], e)
            return False
        return True

    def store(self, key: str, outputs) -> None:
        """Keep copies of `outputs` under `key`, written beside the entry and renamed into place; best effort:
        a cache that cannot take them only logs why."""
        entry = self._entry(key)
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(dir=entry.parent, prefix=f".{key}."))
        except OSError as e:
            log.warning("output cache: not stored (%s)", e)
            return
        try:
            files = []
            for i, out in enumerate(outputs):
                shutil.copyfile(out, staging / str(i))
                files.append(dict(name=Path(out).name, sha256=file_digest(staging / str(i))))
            (staging / "manifest.json").write_text(integrity.sealed(dict(key=key, files=files), indent=1),
                                                   encoding="utf-8")
            if entry.exists():  # a corrupt entry, or one another job just wrote: replace it
                shutil.rmtree(entry, ignore_errors=True)
            os.replace(staging, entry)
        except OSError as e:  # e.g. another job stored the same key between rmtree and replace
            log.warning("output cache: entry %s not stored (%s)", key[:16], e)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def cached_job(snakemake, make, extra=None) -> None:
    """A job's script: make(log) with the job's log, by reuse_or_make; `extra()`: what else the outputs
    follow from."""
    with logged(snakemake.log[0]) as log:
        reuse_or_make(snakemake, lambda: make(log), log, extra=extra() if extra else None)


def reuse_or_make(snakemake, make, log, extra: dict | None = None) -> None:
    """Restore the job's outputs from the cache, or call make() and store what it wrote; `snakemake`'s rule,
    input, params, config and output, with `extra`, make the key. make() returns False when its outputs do
    not follow from the key alone (a compile timed out), and then nothing is stored."""
    root = cache_root()
    outputs = list(snakemake.output)
    if root is None:
        make()
        return
    parts = key_parts(snakemake.rule, list(snakemake.input), dict(snakemake.params.items()),
                      dict(snakemake.config), outputs, extra)
    key = _digest(parts)
    log.info("output cache key %s: %s", key[:16], parts_line(parts))
    cache = OutputCache(root)
    if cache.restore(key, outputs):
        log.info("outputs copied from the output cache (%s, entry %s): inputs, params, config and "
                 "software unchanged", root, key[:16])
        return
    if make() is False:
        log.info("outputs not stored in the output cache: they do not follow from its key alone")
        return
    cache.store(key, outputs)
    log.info("outputs stored in the output cache (%s, entry %s)", root, key[:16])
