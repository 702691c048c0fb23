"""Stand-in builds for the measuring worker (imported by name in the worker process, see
experiments/measure/timing_worker.py): a compile that hangs and a compile that kills its process, each for
one marked configuration (k = 384), XLA's real matmul for the rest."""
import os
import time

from tpu_matmul_repro.experiments.measure import harness

MARKED_K = 384


class _Hangs:
    def lower(self, *args):
        time.sleep(3600)


class _Crashes:
    def lower(self, *args):
        os._exit(9)  # as a compiler that aborts the process would


def hang_on_marked(case, limit):
    return _Hangs() if case.k == MARKED_K else harness.build(case, limit)


def crash_on_marked(case, limit):
    return _Crashes() if case.k == MARKED_K else harness.build(case, limit)
