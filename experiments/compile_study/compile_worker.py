"""The compile worker process: reads pickled compile requests on stdin, compiles each for a TPU generation
with libtpu and no device, writes one pickled result per request (docs/compile-study.md). It and what it
imports decide a compile's result (the compile cache hashes its import closure), so it imports nothing
of the parent's process or cache code."""
import os
import pickle
import signal
import sys
import time

if __name__ == "__main__":
    # Ctrl-C reaches the whole process group; the job that started this worker says so once and
    # stops it, so the worker ignores it from here on, while it imports jax too.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

from tpu_matmul_repro.experiments.core import compiler_output  # noqa: E402
from tpu_matmul_repro.experiments.core.cases import Case, wrapper  # noqa: E402
from tpu_matmul_repro.experiments.core.chips import chip  # noqa: E402

PROFILE_FLAG = "--xla_jf_dump_static_llo_profile_to"

_device = None  # the worker's compile-only TPU device


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


def compile_text(case: Case, vmem_limit_bytes: int | None, options: dict | None = None) -> str:
    """Compile `case` for the worker's TPU device and return the compiled HLO text; `options`: XLA and
    libtpu options for this compile alone (jax's compiler_options)."""
    import jax

    sharding = jax.sharding.SingleDeviceSharding(_device)
    args = (jax.ShapeDtypeStruct((case.m, case.k), case.dtype, sharding=sharding),
            jax.ShapeDtypeStruct((case.k, case.n), case.dtype, sharding=sharding))
    kwargs = case.kwargs()
    if case.facts.pallas:
        kwargs["vmem_limit_bytes"] = vmem_limit_bytes
    fn = wrapper(case.kernel)
    lowered = jax.jit(lambda a, b: fn(a, b, **kwargs)).lower(*args)
    return lowered.compile(compiler_options=options or None).as_text()


def compile_in_worker(case: Case, vmem_limit_bytes: int | None, profile: bool,
                      options: dict | None = None) -> dict:
    """One compile; returns status and what the compiler reported. Runs in the worker process."""
    start = time.perf_counter()
    result = dict(status="ok", vmem_bytes=None, oom_limit_bytes=None, est_cycles=None, error="",
                  prefetched=None)
    try:
        try:
            text = compile_text(case, vmem_limit_bytes, options)
        except Exception as e:
            # An older libtpu than the jax (an intermediate release of the history): write the Mosaic
            # IR version it reads, as jax would on a TPU host with it (kernels/compat.py), and retry.
            # (Imported here, as jax is: the compile job's process imports this module for its name.)
            from tpu_matmul_repro.kernels import compat

            version = compat.readable_mosaic_ir_version(str(e))
            if version is None or not compat.use_mosaic_ir_version(version):
                raise
            print(f"libtpu reads Mosaic IR up to version {version}: compiling at it from now on",
                  file=sys.stderr, flush=True)
            text = compile_text(case, vmem_limit_bytes, options)
    except Exception as e:  # the compiler's verdict is a result, not a crash
        result |= compiler_output.compile_failure(e)
    else:
        if not case.facts.pallas:
            result["est_cycles"] = compiler_output.xla_estimated_cycles(text)
        else:
            result["vmem_bytes"] = compiler_output.vmem_bytes_used(text)
            result["prefetched"] = compiler_output.prefetched_operands(text)
            if profile:
                result["est_cycles"] = compiler_output.pallas_estimated_cycles(text)
    result["compile_s"] = time.perf_counter() - start
    return result


def main(target: str, profile_dir: str | None) -> None:
    # libtpu and the compiler write to fds 1 and 2 directly: replies go to a private copy of stdout
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    init_worker(target, profile_dir)
    requests = sys.stdin.buffer
    while True:
        try:
            request = pickle.load(requests)
        except EOFError:
            return
        if request == "platforms":  # a check: which platforms the worker's jax really uses
            pickle.dump(worker_platforms(), replies)
            replies.flush()
            continue
        pickle.dump(compile_in_worker(*request), replies)  # case, limit, profile, options
        replies.flush()


if __name__ == "__main__":
    try:
        main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else None)
    except KeyboardInterrupt:  # Ctrl-C signals the whole process group: the run says so, once
        sys.exit(130)
