"""Deviceless compilation for a TPU generation with libtpu, in worker processes with a timeout.

`jax.experimental.topologies.get_topology_desc` loads libtpu and returns compile-only TPU devices while
`jax.devices()` stays on the CPU; giving the arguments a sharding on one such device makes
`jax.jit(...).lower(...).compile()` run the real TPU compiler. Each compile runs in a worker process:
a hung compile is killed at the timeout, and libtpu's static-profile flag, which must be set before
libtpu loads and slows every compile in its process, stays confined to the profiling worker.
"""
import os
import pickle
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from experiments.compile_study import compiler_output, worker
from experiments.core.cases import Case, wrapper
from experiments.core.chips import chip
from kernels import compat

if TYPE_CHECKING:  # the worker side of this module runs in toolchains without pandas
    from experiments.compile_study.cache import CompileCache

PROFILE_FLAG = "--xla_jf_dump_static_llo_profile_to"
ROOT = str(Path(__file__).resolve().parents[2])

_device = None  # the worker's compile-only TPU device


def worker_env(environ=None) -> dict:
    """The compile worker's environment, fixed before its Python starts: the worker imports jax (through
    the kernels) before any of its own code runs, and jax reads JAX_PLATFORMS when it is imported, so
    setting it later in the worker would leave a TPU host's jax on "tpu,cpu", opening the real TPU in
    every compile worker (jax-ml/jax#13043)."""
    env = dict(os.environ if environ is None else environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    env["JAX_PLATFORMS"] = "cpu"
    # libtpu takes a machine-wide lock file at load; compile-only processes touch no TPU, so several
    # may load it at once (parallel Snakemake jobs, the plain and the profiling worker).
    env["ALLOW_MULTIPLE_LIBTPU_LOAD"] = "1"
    return env


def worker_platforms() -> dict:
    """What the worker's jax uses: its platforms setting and its devices' platforms (a check)."""
    import jax

    try:
        platforms = sorted({d.platform for d in jax.devices()})
    except Exception as e:  # e.g. JAX_PLATFORMS=tpu on a host without one: say so, do not crash
        platforms = [f"error: {type(e).__name__}: {e}"[:300]]
    return dict(jax_platforms=jax.config.jax_platforms, platforms=platforms)


def init_worker(target: str, profile_dir: str | None) -> None:
    os.environ["JAX_PLATFORMS"] = "cpu"  # also set by worker_env, before jax was imported
    os.environ["ALLOW_MULTIPLE_LIBTPU_LOAD"] = "1"
    if profile_dir:
        os.environ["LIBTPU_INIT_ARGS"] = (f"{os.environ.get('LIBTPU_INIT_ARGS', '')} "
                                          f"{PROFILE_FLAG}={profile_dir}")
    global _device
    from jax.experimental import topologies

    _device = topologies.get_topology_desc(chip(target).topology, "tpu").devices[0]


def compile_text(case: Case, vmem_limit_bytes: int | None) -> str:
    """Compile `case` for the worker's TPU device and return the compiled HLO text."""
    import jax

    sharding = jax.sharding.SingleDeviceSharding(_device)
    args = (jax.ShapeDtypeStruct((case.m, case.k), case.dtype, sharding=sharding),
            jax.ShapeDtypeStruct((case.k, case.n), case.dtype, sharding=sharding))
    kwargs = case.kwargs()
    if case.spec.pallas:
        kwargs["vmem_limit_bytes"] = vmem_limit_bytes
    fn = wrapper(case.kernel)
    return jax.jit(lambda a, b: fn(a, b, **kwargs)).lower(*args).compile().as_text()


def compile_in_worker(case: Case, vmem_limit_bytes: int | None, profile: bool) -> dict:
    """One compile; returns status and what the compiler reported. Runs in the worker process."""
    start = time.perf_counter()
    result = dict(status="ok", vmem_bytes=None, oom_limit_bytes=None, est_cycles=None, error="")
    try:
        try:
            text = compile_text(case, vmem_limit_bytes)
        except Exception as e:
            # An older libtpu than the jax (an intermediate release of the history): write the Mosaic
            # IR version it reads, as jax would on a TPU host with it (kernels/compat.py), and retry.
            version = compat.readable_mosaic_ir_version(str(e))
            if version is None or not compat.use_mosaic_ir_version(version):
                raise
            print(f"libtpu reads Mosaic IR up to version {version}: compiling at it from now on",
                  file=sys.stderr, flush=True)
            text = compile_text(case, vmem_limit_bytes)
    except Exception as e:  # the compiler's verdict is a result, not a crash
        result |= compiler_output.compile_failure(e)
    else:
        if not case.spec.pallas:
            result["est_cycles"] = compiler_output.xla_estimated_cycles(text)
        else:
            result["vmem_bytes"] = compiler_output.vmem_bytes_used(text)
            if profile:
                result["est_cycles"] = compiler_output.pallas_estimated_cycles(text)
    result["compile_s"] = time.perf_counter() - start
    return result


class Compiler:
    """A worker process that compiles cases for one target; killed and restarted after a timeout."""

    def __init__(self, target: str, *, profile: bool = False, timeout_s: float = 300, stderr=None,
                 cache: "CompileCache | None" = None, python: str | None = None, env: dict | None = None,
                 toolchain: str = ""):
        """`python` runs the worker (a toolchain's environment; default: this process's), with `env`
        added to its environment; `toolchain` names it in the errors of a worker that dies. `cache`:
        compile results by content (experiments/compile_study/cache.py), None to always compile."""
        chip(target)  # unknown targets fail here, in the caller's process
        self.target, self.profile, self.timeout_s, self.cache = target, profile, timeout_s, cache
        self.python, self.env, self.toolchain = python or sys.executable, dict(env or {}), toolchain
        self._stderr = stderr if stderr is not None else subprocess.DEVNULL
        self._profile_dir = tempfile.TemporaryDirectory(prefix="llo-profile-") if profile else None
        self._proc = None

    def _start(self) -> subprocess.Popen:
        if self._proc is None:
            env = worker_env() | self.env
            if self.python != sys.executable and "TPU_LIBRARY_PATH" not in self.env:
                # Importing jax here set TPU_LIBRARY_PATH to this environment's libtpu: another
                # toolchain's jax would load that one instead of its own (seen: jax 0.4.36 with
                # libtpu 0.0.42.1 fails every compile with "Instruction with id > INT_MAX").
                env.pop("TPU_LIBRARY_PATH", None)
            profile_dir = self._profile_dir.name if self._profile_dir else ""
            self._proc = subprocess.Popen(
                [self.python, "-m", worker.__name__, self.target, profile_dir],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env)
        return self._proc

    def compile(self, case: Case, vmem_limit_bytes: int | None = None) -> dict:
        """The compile's result: from the cache when it has it (no worker started), else compiled."""
        cached = self.cache.get(case, vmem_limit_bytes) if self.cache else None
        if cached is not None:
            return dict(cached)
        result = self._compile(case, vmem_limit_bytes)
        if self.cache:
            self.cache.put(case, vmem_limit_bytes, result)
        return result

    def _compile(self, case: Case, vmem_limit_bytes: int | None) -> dict:
        proc = self._start()
        pickle.dump((case, vmem_limit_bytes, self.profile), proc.stdin)
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
        if self._profile_dir:
            self._profile_dir.cleanup()
