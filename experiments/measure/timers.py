"""Three ways to time a compiled call (profiler device events, batched asynchronous calls, blocked
calls) and the dispatch floor that bounds the batched one (docs/measuring.md).
"""
import glob
import re
import statistics
import tempfile

import jax
import jax.numpy as jnp

DEVICE_MODULE_LINE = "XLA Modules"


def time_blocked(call, inputs, n: int, clock) -> list[float]:
    """Seconds of n single calls, each waited for: the post's `timeit` method."""
    samples = []
    for i in range(n):
        a, b = inputs[i % len(inputs)]
        start = clock()
        call(a, b).block_until_ready()
        samples.append(clock() - start)
    return samples


def time_batched(call, inputs, n: int, calls: int, clock) -> list[float]:
    """Seconds per call of n batches of `calls` asynchronous calls, each batch timed as a whole."""
    samples = []
    for s in range(n):
        start = clock()
        outs = [call(*inputs[(s * calls + j) % len(inputs)]) for j in range(calls)]
        jax.block_until_ready(outs)
        samples.append((clock() - start) / calls)
        del outs
    return samples


def dispatch_floor(clock, calls: int = 200, batches: int = 5) -> float:
    """Median seconds per call of the batched timer on a trivial op (one float added to one float)."""
    tiny = jax.jit(lambda a, b: a + b)
    x = jnp.ones((1,), jnp.float32)
    tiny(x, x).block_until_ready()
    return statistics.median(time_batched(tiny, [(x, x)], batches, calls, clock))


def module_name(compiled) -> str:
    """The HLO module name of a compiled call ("jit__lambda"), as profiler events name it."""
    first = compiled.as_text().lstrip().split("\n", 1)[0]
    found = re.match(r"HloModule\s+([^\s,]+)", first)
    if not found:
        raise ValueError(f"no HloModule name in the compiled text: {first[:100]!r}")
    return found.group(1)


def _stats(event) -> dict:
    return {key: value for key, value in event.stats}


def _event_module(event, stats: dict) -> str:
    # CPU (and GPU) op events carry the module as a stat; TPU module events are named "module(id)".
    return str(stats.get("hlo_module") or re.sub(r"\(\d+\)$", "", event.name))


def run_durations(profile, module: str) -> list[float]:
    """Seconds of each run of `module` in a profile (a jax.profiler.ProfileData or the same shape),
    in start order: from device planes where the profile has any, else from the host's XLA threads."""
    planes = list(profile.planes)
    devices = [p for p in planes if p.name.startswith("/device:")]
    runs = {}  # (plane, run) -> [start_ns, end_ns]
    for plane in devices or [p for p in planes if p.name.startswith("/host:")]:
        lines = list(plane.lines)
        if devices and any(line.name == DEVICE_MODULE_LINE for line in lines):
            lines = [line for line in lines if line.name == DEVICE_MODULE_LINE]
        for line in lines:
            for i, event in enumerate(line.events):
                stats = _stats(event)
                if line.name == DEVICE_MODULE_LINE:  # one event per run of a program
                    if _event_module(event, stats) != module:
                        continue
                    run = ("module event", i)
                elif stats.get("hlo_module") == module and "run_id" in stats:  # op events of a run
                    run = stats["run_id"]
                else:
                    continue
                span = runs.setdefault((plane.name, run), [event.start_ns, event.end_ns])
                span[0], span[1] = min(span[0], event.start_ns), max(span[1], event.end_ns)
    return [(end - start) * 1e-9 for start, end in sorted(runs.values())]


def load_profile(trace_dir: str):
    from jax.profiler import ProfileData

    found = sorted(glob.glob(f"{trace_dir}/**/*.xplane.pb", recursive=True))
    if not found:
        raise RuntimeError(f"the profiler wrote no .xplane.pb under {trace_dir}")
    return ProfileData.from_file(found[-1])


def time_profiled(call, inputs, n: int, module: str) -> list[float]:
    """Device seconds of each of n calls, from the profiler's device events (see the module doc)."""
    with tempfile.TemporaryDirectory(prefix="measure-trace-") as trace_dir:
        jax.profiler.start_trace(trace_dir)
        try:
            # each call waited for: on the device the event is the kernel either way, and on the CPU
            # backend, calls left in flight together would share its threads and stretch each run
            for i in range(n):
                call(*inputs[i % len(inputs)]).block_until_ready()
        finally:
            jax.profiler.stop_trace()
        durations = run_durations(load_profile(trace_dir), module)
    if len(durations) != n:
        raise RuntimeError(f"the profile holds {len(durations)} runs of {module}, expected {n}")
    return durations
