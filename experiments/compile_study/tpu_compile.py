"""The parent side of deviceless TPU compiles: `Compiler` runs compile workers (compile_worker.py), one
process each, so a hung compile is killed at the timeout and the static-profile flag stays in its worker.
"""
import contextlib
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from tpu_matmul_repro.experiments.compile_study import compile_worker
from tpu_matmul_repro.experiments.core.chips import chip

if TYPE_CHECKING:
    from tpu_matmul_repro.experiments.compile_study.cache import CompileCache
    from tpu_matmul_repro.experiments.core.cases import Case


ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "tpu_matmul_repro"  # pyproject.toml: the package whose folders are this checkout's


def import_root(folder: str) -> str:
    """`folder`, holding one link tpu_matmul_repro -> this checkout: on PYTHONPATH it lets a toolchain's
    Python, without the project installed, import this checkout's worker and kernels."""
    link = Path(folder) / PACKAGE
    if not link.exists():
        link.symlink_to(ROOT, target_is_directory=True)
    return folder


def with_import_root(env: dict, folder: str) -> dict:
    """`env` with `folder` made an import root (import_root) ahead on its PYTHONPATH."""
    return env | {"PYTHONPATH": os.pathsep.join(filter(None, [import_root(folder), env.get("PYTHONPATH")]))}


def worker_env(environ=None) -> dict:
    """The compile worker's environment, fixed before its Python starts: jax reads JAX_PLATFORMS on import
    (through the kernels), so setting it later would open a TPU host's real TPU (jax-ml/jax#13043)."""
    env = dict(os.environ if environ is None else environ)
    env["JAX_PLATFORMS"] = "cpu"
    # libtpu takes a machine-wide lock file at load; compile-only processes touch no TPU, so several
    # may load it at once (parallel Snakemake jobs, the plain and the profiling worker).
    env["ALLOW_MULTIPLE_LIBTPU_LOAD"] = "1"
    return env


@contextlib.contextmanager
def _interrupts_held_and_ignored():
    """While a worker starts, SIGINT is blocked (pending, not lost) and ignored, a disposition the worker
    inherits through exec: a Ctrl-C reaches the process group, and the job stops the worker and says so once.
    Not a preexec_fn: it forks with Python's at-fork hooks (jax warns of a deadlock), unsafe with threads."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    previous = signal.getsignal(signal.SIGINT)
    # signal.signal works in the main thread only, and cannot restore a handler set outside Python
    ignore = previous is not None and threading.current_thread() is threading.main_thread()
    try:
        if ignore:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        yield
    finally:
        if ignore:
            signal.signal(signal.SIGINT, previous)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


class Compiler:
    """A worker process that compiles cases for one target; killed and restarted after a timeout."""

    def __init__(self, target: str, *, profile: bool = False, timeout_s: float = 300, stderr=None,
                 cache: "CompileCache | None" = None, python: str | None = None, env: dict | None = None,
                 toolchain: str = ""):
        """`python` runs the worker (default: this process's), with `env` added; `toolchain` names it in a
        dead worker's errors; `cache`: compile results by content (cache.py), None to always compile."""
        chip(target)  # unknown targets fail here, in the caller's process
        self.target, self.profile, self.timeout_s, self.cache = target, profile, timeout_s, cache
        self.python, self.env, self.toolchain = python or sys.executable, dict(env or {}), toolchain
        self._stderr = stderr if stderr is not None else subprocess.DEVNULL
        self._profile_dir = tempfile.TemporaryDirectory(prefix="llo-profile-") if profile else None
        self._import_root = (tempfile.TemporaryDirectory(prefix="tpu-matmul-repro-import-")
                             if self.python != sys.executable else None)
        self._proc = None

    def _start(self) -> subprocess.Popen:
        if self._proc is None:
            env = worker_env() | self.env
            if self._import_root is not None:
                env = with_import_root(env, self._import_root.name)
            if self.python != sys.executable and "TPU_LIBRARY_PATH" not in self.env:
                # Importing jax here set TPU_LIBRARY_PATH to this environment's libtpu: another
                # toolchain's jax would load that one instead of its own (seen: jax 0.4.36 with
                # libtpu 0.0.42.1 fails every compile with "Instruction with id > INT_MAX").
                env.pop("TPU_LIBRARY_PATH", None)
            profile_dir = self._profile_dir.name if self._profile_dir else ""
            with _interrupts_held_and_ignored():
                self._proc = subprocess.Popen(
                    [self.python, "-m", compile_worker.__name__, self.target, profile_dir],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env)
        return self._proc

    def compile(self, case: "Case", vmem_limit_bytes: int | None = None, options: dict | None = None) -> dict:
        """The compile's result, from the cache where it has it; `options`: compiler options (XLA flags)."""
        cached = self.cache.get(case, vmem_limit_bytes, options) if self.cache else None
        if cached is not None:
            return dict(cached)
        result = self._compile(case, vmem_limit_bytes, options)
        if self.cache:
            self.cache.put(case, vmem_limit_bytes, result, options)
        return result

    def _compile(self, case: "Case", vmem_limit_bytes: int | None, options: dict | None = None) -> dict:
        proc = self._start()
        pickle.dump((case, vmem_limit_bytes, self.profile, options), proc.stdin)
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], self.timeout_s)
        if not ready:
            self.close()
            return dict(status="timeout", vmem_bytes=None, oom_limit_bytes=None, est_cycles=None,
                        error=f"compile did not finish within timeout_s={self.timeout_s}",
                        compile_s=float(self.timeout_s))
        try:
            return pickle.load(proc.stdout)
        except EOFError:
            code = proc.wait()
            self._proc = None
            return dict(status="compile_error", vmem_bytes=None, oom_limit_bytes=None, est_cycles=None,
                        error=f"compile worker{self._of_toolchain()} exited with code {code} "
                              "(crashed in the compiler, or could not start it?)",
                        compile_s=float("nan"))

    def platforms(self) -> dict:
        """The worker's jax platforms and device platforms (tests check they are the CPU's only)."""
        proc = self._start()
        pickle.dump("platforms", proc.stdin)
        proc.stdin.flush()
        return pickle.load(proc.stdout)

    def _of_toolchain(self) -> str:
        return f" of toolchain {self.toolchain!r} ({self.python})" if self.toolchain else ""

    def close(self):
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        for folder in (self._profile_dir, self._import_root):
            if folder:
                folder.cleanup()
