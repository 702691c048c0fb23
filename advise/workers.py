"""Compile workers kept for a whole search (each start imports jax and loads libtpu), several pairs
at once, rows made as study.run_jobs makes them; every compile goes through a Guard, so nothing
compiles past the deadline and no worker outlives its parent's call (docs/advisor.md)."""
import concurrent.futures
import contextlib
import logging
import threading
import time

import pandas as pd

from tpu_matmul_repro.experiments.compile_study import cache
from tpu_matmul_repro.experiments.compile_study.study import job_rows, job_versions
from tpu_matmul_repro.experiments.compile_study.tpu_compile import Compiler
from tpu_matmul_repro.experiments.core.runtime import Progress
from tpu_matmul_repro.experiments.core.schema import frame
from tpu_matmul_repro.report.advice import BUDGET_SPENT

log = logging.getLogger(__name__)


_LIMITS = {"deadline": None, "on_done": None}  # of the advisor call under way (limits())


@contextlib.contextmanager
def limits(deadline: float | None, on_done=None):
    """For every Workers opened meanwhile (search.search opens them): nothing compiled after `deadline`
    (time.monotonic()), and `on_done` called once per configuration done."""
    before = dict(_LIMITS)
    _LIMITS.update(deadline=deadline, on_done=on_done)
    try:
        yield
    finally:
        _LIMITS.update(before)


class Stopped(Exception):
    """Raised in a compile thread once the parent stopped the workers: its job's rows are not wanted."""


class Guard:
    """A Compiler's stand-in for job_rows: the same compile(), bounded by a deadline and a stop."""

    def __init__(self, compiler: Compiler, deadline: float | None, stop: threading.Event):
        self.compiler, self.deadline, self.stop = compiler, deadline, stop
        self.timeout_s = compiler.timeout_s

    def compile(self, case, vmem_limit_bytes=None, options=None) -> dict:
        if self.stop.is_set():
            raise Stopped
        left = None if self.deadline is None else self.deadline - time.monotonic()
        if left is not None and left <= 0:
            held = self.compiler.cache.get(case, vmem_limit_bytes, options) if self.compiler.cache else None
            return dict(held) if held is not None else spent()
        self.compiler.timeout_s = self.timeout_s if left is None else max(0.1, min(self.timeout_s, left))
        result = self.compiler.compile(case, vmem_limit_bytes, options)
        if self.stop.is_set():
            raise Stopped
        if (result["status"] == "timeout" and self.compiler.timeout_s < self.timeout_s
                and time.monotonic() >= self.deadline):  # cut at the deadline, not at its own timeout
            return spent()
        return result


def spent() -> dict:
    return dict(status="timeout", vmem_bytes=None, oom_limit_bytes=None, est_cycles=None, error=BUDGET_SPENT,
                compile_s=0.0)


class Counted(Progress):
    """job_rows' progress, also counting each configuration done for the caller (`done`)."""

    def __init__(self, total: int, done):
        super().__init__(total, log)
        self._done = done

    def step(self, what: str) -> str:
        self._done()
        return super().step(what)


class Workers:
    """`pairs` pairs of compile workers for one target and toolchain, under limits()' deadline."""

    def __init__(self, target: str, compiler: dict, timeout_s: float, pairs: int = 1):
        self.versions = job_versions(compiler.get("versions"))
        python = compiler.get("python")
        options = dict(timeout_s=timeout_s, python=python, env=compiler.get("env"),
                       toolchain=compiler["toolchain"] if python else "")
        self.stop = threading.Event()
        self.deadline, self.on_done = _LIMITS["deadline"], _LIMITS["on_done"] or (lambda: None)
        self.pairs = [(Compiler(target, cache=cache.for_target(target, False, self.versions), **options),
                       Compiler(target, profile=True, cache=cache.for_target(target, True, self.versions),
                                **options)) for _ in range(max(1, pairs))]

    def run(self, parts: list[list]) -> pd.DataFrame:
        """The rows of each part's jobs, in the parts' order; each pair takes the next part no pair has
        taken, so a pair done early takes more."""
        untaken, lock = iter(range(len(parts))), threading.Lock()
        done = [[] for _ in parts]
        serving = []  # the pairs whose thread is serving: halted below until none is left

        def serve(pair):
            serving.append(pair)  # before any worker starts: a halt waits for this thread
            try:
                guarded = [Guard(worker, self.deadline, self.stop) for worker in pair]
                while not self.stop.is_set():
                    with lock:
                        i = next(untaken, None)
                    if i is None:
                        return
                    progress = Counted(sum(len(job.cases) for job in parts[i]), self.on_done)
                    done[i] = [row for job in parts[i]
                               for row in job_rows(job, *guarded, progress)]
            finally:
                serving.remove(pair)

        busy = self.pairs[:max(1, len(parts))]
        with concurrent.futures.ThreadPoolExecutor(len(busy)) as pool:
            # A signal may come while the threads are still being started: the try covers that too, or
            # the pool's exit would wait on a thread blocked in a compile.
            try:
                for future in [pool.submit(serve, pair) for pair in busy]:
                    future.result()  # re-raises a pair's exception
            except BaseException:  # Ctrl-C, SIGTERM or an error: the other threads must not go on
                self.halt()
                while serving:
                    time.sleep(0.05)
                    self.halt()  # a thread may have started a worker since
                raise
        return frame([row for part in done for row in part], self.versions)

    def spent(self) -> bool:
        """Whether the deadline has passed: nothing more is compiled."""
        return self.deadline is not None and time.monotonic() >= self.deadline

    def halt(self) -> None:
        """Stop every compile now: no thread starts another, and the running ones' workers are killed
        (their results, a crash the kill caused, kept out of the cache)."""
        self.stop.set()
        for pair in self.pairs:
            for worker in pair:
                worker.cache = None
                worker.close()

    def close(self) -> None:
        for pair in self.pairs:
            for worker in pair:
                worker.__exit__(None, None, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
