"""A content-addressed cache of compile results, shared by all jobs and kept across runs outside results/
(docs/compile-study.md, "The compile cache"; docs/reliability.md: what it trusts).
"""
import dataclasses
import functools
import hashlib
import json
import logging
import math
import os
import shutil
import threading
from pathlib import Path

from tpu_matmul_repro.experiments.core import integrity, reading
from tpu_matmul_repro.experiments.core.cache_dirs import cache_folder
from tpu_matmul_repro.experiments.core.chips import CHIPS
from tpu_matmul_repro.experiments.core.units import MiB, flops

log = logging.getLogger(__name__)

FORMAT = 2  # bump when an entry's layout changes
RESULT_FIELDS = ("status", "vmem_bytes", "oom_limit_bytes", "est_cycles", "error", "compile_s", "prefetched")
# Deterministic outcomes only: a timeout or a crashed worker may not happen again.
CACHEABLE = ("ok", "vmem_oom", "compile_error")


_unwritable = set()  # cache folders this process could not write to: said once, then not tried again
_unsealed_said = set()  # cache folders whose entries without a digest this process has said it recompiles
# every lookup of this process, all caches together (the advisor's log counts its compiles with it;
# its jobs may run in threads), and the results not kept for not being deterministic or sound ("unkept":
# a job that used one keeps its outputs out of the output cache, experiments/core/output_cache.py)
TOTALS = {"hits": 0, "misses": 0, "unkept": 0}
_TOTALS_LOCK = threading.Lock()


def _tally(outcome: str) -> None:
    with _TOTALS_LOCK:
        TOTALS[outcome] += 1


def all_kept() -> bool:
    """Whether every compile result of this process so far was one the cache could keep: a job's
    outputs follow from its inputs only then (no timeout, no crashed worker)."""
    return TOTALS["unkept"] == 0


def cache_root() -> Path | None:
    """The cache folder, or None when disabled."""
    return cache_folder("compile")


class CompileCache:
    """Results of one kind of compile (target, profile, toolchain, code), keyed by case and limit."""

    def __init__(self, root: Path, context: dict):
        self.root, self.context = Path(root), context
        self.hits = self.misses = self.corrupt = 0

    def key(self, case, vmem_limit_bytes: int | None, options: dict | None = None) -> str:
        what = dict(format=FORMAT, context=self.context, case=dataclasses.asdict(case),
                    vmem_limit_bytes=vmem_limit_bytes)
        if options:  # a compile with compiler options of its own
            what["compiler_options"] = options
        return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, case, vmem_limit_bytes: int | None, options: dict | None = None) -> dict | None:
        key = self.key(case, vmem_limit_bytes, options)
        path = self._path(key)
        try:
            if not path.exists():
                return self._miss()
            entry = integrity.unsealed(reading.read_text(path, "cache entry"))
            result = entry.get("result")
            if not isinstance(result, dict) or entry.get("key") != key:  # a list, a number, another key
                raise ValueError("not an entry of this key")
            inputs = dict(context=self.context, case=dataclasses.asdict(case),
                          vmem_limit_bytes=vmem_limit_bytes, compiler_options=options)
            if _canonical({k: entry.get(k) for k in inputs}) != _canonical(inputs):
                raise ValueError("its inputs are not this compile's")
            why = problem(result, case, self.context.get("target"))
            if why:
                raise ValueError(why)
        except integrity.Unsealed as e:  # an earlier version's entry: compiled again, said once
            if self.root not in _unsealed_said:
                _unsealed_said.add(self.root)
                log.warning("compile cache: entries without a digest (%s, the first) were written before "
                            "entries carried one; each is compiled again and rewritten with one", path)
            log.info("compile cache: %s: %s; compiling again", path, e)
            return self._miss()
        except (OSError, ValueError, KeyError, TypeError) as e:  # a folder, bad JSON, a changed value, ...
            log.warning("compile cache: %s is corrupt (%s); compiling again", path, e)
            self.corrupt += 1
            return self._miss()
        self.hits += 1
        _tally("hits")
        return result

    def _miss(self) -> None:
        self.misses += 1
        _tally("misses")

    def put(self, case, vmem_limit_bytes: int | None, result: dict, options: dict | None = None) -> None:
        """Keep `result`, if it is deterministic and sound; best effort, as a cache is."""
        result = {f: result.get(f) for f in RESULT_FIELDS}
        if problem(result, case, self.context.get("target")):
            _tally("unkept")
            return
        if self.root in _unwritable:
            return
        from tpu_matmul_repro.experiments.core.atomic_write import (
            write_text_atomic,  # here: compile workers have no pandas
        )

        key = self.key(case, vmem_limit_bytes, options)
        path = self._path(key)
        entry = dict(key=key, context=self.context, case=dataclasses.asdict(case),
                     vmem_limit_bytes=vmem_limit_bytes, compiler_options=options, result=result)
        try:
            if path.is_dir() and not path.is_symlink():  # a folder in the entry's place: replaced
                shutil.rmtree(path, ignore_errors=True)
            write_text_atomic(integrity.sealed(entry), path, shared=True)
        except OSError as e:  # read-only, full, not ours: the compile's result stands without the cache
            _unwritable.add(self.root)
            log.warning("compile cache: cannot write to %s (%s); this run compiles without caching",
                        self.root, e.strerror or e)

    def summary(self) -> str:
        return f"{self.hits} from the cache, {self.misses} compiled" + (
            f" ({self.corrupt} corrupt entries recomputed)" if self.corrupt else "")


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True)


def _whole(value, least: int = 1) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def problem(result: dict, case, target: str | None) -> str:
    """Why `result` cannot be a cache entry for `case` compiled for `target` ("" if it can): its fields
    and types, and the physics (an out-of-VMEM request above its limit, no VMEM or speed past the chip's)."""
    if set(result) != set(RESULT_FIELDS):
        return f"fields {sorted(result)}, not {sorted(RESULT_FIELDS)}"
    status, cycles = result["status"], result["est_cycles"]
    if status not in CACHEABLE:
        return f"status {status!r} is not a deterministic outcome {CACHEABLE}"
    for field in ("vmem_bytes", "oom_limit_bytes", "est_cycles"):
        if result[field] is not None and not _whole(result[field]):
            return f"{field}={result[field]!r} is not a positive whole number"
    compile_s = result["compile_s"]
    if not isinstance(compile_s, (int, float)) or isinstance(compile_s, bool) or not (
            math.isfinite(compile_s) and compile_s >= 0):
        return f"compile_s={compile_s!r} is not a finite number of seconds"
    if not isinstance(result["error"], str):
        return f"error={result['error']!r} is not text"
    prefetched = result["prefetched"]  # None: not read (not a Pallas kernel, or an older entry's result)
    if prefetched is not None and (isinstance(prefetched, bool) or not isinstance(prefetched, int)
                                   or not 0 <= prefetched <= 2):
        return f"prefetched={prefetched!r} is not a count of the kernel's two operands"
    if status == "ok" and not (result["vmem_bytes"] or cycles):
        return "an ok compile without VMEM bytes or cycles"
    used, limit = result["vmem_bytes"], result["oom_limit_bytes"]
    if status == "vmem_oom" and used is not None and limit is not None and used <= limit:
        return (f"an out-of-VMEM verdict for vmem_bytes={used}, which is not above its limit "
                f"oom_limit_bytes={limit}")
    chip = CHIPS.get(target)
    if chip is not None:  # only a refused request (vmem_oom) may exceed the chip's VMEM
        used_or_none = None if status == "vmem_oom" else used
        for field, value in (("vmem_bytes", used_or_none), ("oom_limit_bytes", limit)):
            if value is not None and value > chip.vmem_bytes:
                return (f"{field}={value} is more than {target}'s physical VMEM ({chip.vmem_bytes} bytes, "
                        f"{chip.vmem_bytes // MiB} MiB)")
    if cycles is not None and chip is not None and case.dtype in chip.peak_flops:
        fastest = flops(case.m, case.k, case.n) * chip.clock_hz / chip.peak_flops[case.dtype]
        if cycles < fastest:
            return (f"est_cycles={cycles} is faster than {target}'s peak allows for {case.label()} "
                    f"(at least {math.ceil(fastest)})")
    return ""


def for_target(target: str, profile: bool, versions: dict) -> CompileCache | None:
    """The cache for `target`'s compiles by the toolchain of `versions`; None when disabled."""
    root = cache_root()
    if root is None:
        return None
    toolchain = {k: versions.get(k) for k in ("jax_version", "jaxlib_version", "libtpu_version")}
    # what, besides the case and the limit, decides a compile's result
    context = dict(target=target, profile=profile, versions=toolchain, code=_checkout_digest(),
                   libtpu_init_args=os.environ.get("LIBTPU_INIT_ARGS", ""))
    return CompileCache(root, context)


WORKER = Path("experiments") / "compile_study" / "compile_worker.py"


@functools.cache  # once per process: an advisor's search opens a cache per job
def _checkout_digest() -> str:
    return compile_code_digest()


def compile_code_digest(root: Path | None = None) -> str:
    """The digest of the code that decides a compile: the compile worker's import closure, by syntax tree
    (comments and wrapping do not count); the parent's process, cache and planning code are not in it."""
    from tpu_matmul_repro.experiments.core.code_inputs import ROOT, closure, digest

    root = ROOT if root is None else Path(root)
    return digest(closure(root / WORKER, root), root, semantic=True)
