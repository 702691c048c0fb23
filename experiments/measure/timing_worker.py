"""The measuring worker process, `python -m experiments.measure.timing_worker PLATFORM [BUILD]`: the only
process of a measuring job that opens the device; replies go to a private copy of fd 1 (process.py).
"""
import importlib
import os
import pickle
import sys

from tpu_matmul_repro.experiments.measure.process import DEFAULT_BUILD, HEADER


def _resolve(path: str):
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def _hello() -> dict:
    import time as clock

    import jax

    from tpu_matmul_repro.experiments.measure import device, timers

    found = jax.devices()
    coords = {(d.process_index, tuple(d.coords)) for d in found if getattr(d, "coords", None) is not None}
    return dict(platform=found[0].platform, device_kind=found[0].device_kind, count=len(found),
                num_chips=device.count_chips(found[0].device_kind, len(found), len(coords) or None),
                dispatch_floor_s=timers.dispatch_floor(clock.perf_counter))


def main(platform: str, build_path: str) -> None:
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)

    def send(kind, payload):
        message = pickle.dumps((kind, payload))
        replies.write(HEADER.pack(len(message)) + message)
        replies.flush()

    try:
        from tpu_matmul_repro.experiments.measure import harness

        build = _resolve(build_path)
        send("hello", _hello())
    except Exception as e:
        send("error", f"{type(e).__name__}: {e}")
        return
    requests = sys.stdin.buffer
    while True:
        try:
            case, limit, settings = pickle.load(requests)
        except EOFError:
            return
        result = harness.measure_case(case, build(case, limit), settings,
                                      phase=lambda name: send("phase", name))
        send("result", result)


if __name__ == "__main__":
    try:
        main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else DEFAULT_BUILD)
    except KeyboardInterrupt:  # Ctrl-C signals the whole process group: the run says so, once
        sys.exit(130)
