"""The job's side of measuring: `Worker` starts, feeds and, past a timeout, kills the timing worker
(timing_worker.py), the only process that opens the device; a killed or dead worker becomes a row.
"""
import os
import pickle
import select
import struct
import subprocess
import sys
import tempfile
import time

from tpu_matmul_repro.experiments.core.compiler_output import readable_error

WORKER = "tpu_matmul_repro.experiments.measure.timing_worker"
DEFAULT_BUILD = "tpu_matmul_repro.experiments.measure.harness:build"
HEADER = struct.Struct("<Q")  # each message: its length, then the pickle


class WorkerFailed(RuntimeError):
    """The measuring worker could not be started."""


def empty_result() -> dict:
    return dict(status="ok", error="", vmem_bytes=None, oom_limit_bytes=None, rel_error=None,
                max_tile_error=None, precision="", samples_s=None, wall_samples_s=None,
                device_samples_s=None, timer="", calls_per_sample=None, compile_s=None)


def worker_env(platform: str, environ=None) -> dict:
    """The worker's environment: JAX_PLATFORMS=cpu for a CPU job; for a TPU job none, so JAX finds
    the TPU itself (the job's own process runs with JAX_PLATFORMS=cpu and must not pass it on)."""
    env = dict(os.environ if environ is None else environ)
    env.pop("JAX_PLATFORMS", None)
    if platform == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
    return env


class Worker:
    """The job's side: starts, feeds and, on a timeout, kills the worker process."""

    def __init__(self, platform: str, *, timeout_s: float = 600, build: str = DEFAULT_BUILD,
                 start_timeout_s: float = 300):
        self.platform, self.timeout_s, self.build = platform, timeout_s, build
        self.start_timeout_s = start_timeout_s
        self._proc, self._stderr, self._buffer, self.found = None, None, bytearray(), None

    def _spawn(self) -> dict:
        self._stderr, self._buffer = tempfile.TemporaryFile(), bytearray()
        command = [sys.executable, "-m", WORKER, self.platform, self.build]
        self._proc = subprocess.Popen(command,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                      env=worker_env(self.platform))
        kind, payload = self._receive(time.monotonic() + self.start_timeout_s)
        if kind != "hello":
            tail = self.stderr_tail()
            self.close()
            raise WorkerFailed(f"the measuring worker did not start ({kind}: {payload}); "
                               f"its stderr ends:\n{tail}")
        return payload

    def start(self, settings=None) -> dict:
        """Start the worker; what it found: platform, device_kind, count, num_chips, dispatch_floor_s."""
        self.found = self._spawn()
        return self.found

    def _receive(self, deadline: float):
        """The next message, ("timeout", None) past the deadline, or ("exit", code) if the worker died; read
        length-prefixed from the raw pipe (a buffered reader could hold a message while select() waits)."""
        fd = self._proc.stdout.fileno()
        while True:
            if len(self._buffer) >= HEADER.size:
                (size,) = HEADER.unpack_from(self._buffer)
                if len(self._buffer) >= HEADER.size + size:
                    message = bytes(self._buffer[HEADER.size:HEADER.size + size])
                    del self._buffer[:HEADER.size + size]
                    return pickle.loads(message)
            ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                return "timeout", None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return "exit", self._proc.wait()
            self._buffer += chunk

    def stderr_tail(self, chars: int = 2000) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-chars:]

    def measure(self, case, limit, settings) -> dict:
        if self._proc is None:
            self._spawn()
        pickle.dump((case, limit, settings), self._proc.stdin)
        self._proc.stdin.flush()
        deadline, phase = time.monotonic() + self.timeout_s, "starting"
        while True:
            kind, payload = self._receive(deadline)
            if kind == "phase":
                phase = payload
            elif kind == "result":
                return payload
            elif kind == "timeout":
                self.close()
                return empty_result() | dict(
                    status="timeout", compile_s=float(self.timeout_s) if phase == "compiling" else None,
                    error=f"did not finish within timeout_s={self.timeout_s} (while {phase}); worker killed")
            else:  # the worker died: a compiler or runtime crash
                tail = self.stderr_tail(600)
                self.close()
                return empty_result() | dict(
                    status="compile_error" if phase == "compiling" else "runtime_error",
                    error=readable_error(f"measuring worker exited with code {payload} while {phase}: "
                                         f"{tail}"))

    def close(self):
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
