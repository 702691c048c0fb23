"""Compile workers kept for a whole search: the advisor compiles in batches (the first candidates, then
those the bound cannot prune), and each start of a worker imports jax and loads libtpu, seconds of
CPU that study.run_jobs spends once per call. Here each pair (a plain and a profiling worker, as
run_jobs opens them) serves every batch of a search, and several pairs compile at once. The rows are
study.job_rows', made exactly as in run_jobs."""
import concurrent.futures
import logging
import threading

import pandas as pd

from tpu_matmul_repro.experiments.compile_study import cache
from tpu_matmul_repro.experiments.compile_study.study import job_rows, job_versions
from tpu_matmul_repro.experiments.compile_study.tpu_compile import Compiler
from tpu_matmul_repro.experiments.core.runtime import Progress
from tpu_matmul_repro.experiments.core.schema import frame

log = logging.getLogger(__name__)


class Workers:
    """`pairs` pairs of compile workers for one target and toolchain (`compiler`: cli.compiler_for)."""

    def __init__(self, target: str, compiler: dict, timeout_s: float, pairs: int = 1):
        self.versions = job_versions(compiler.get("versions"))
        python = compiler.get("python")
        options = dict(timeout_s=timeout_s, python=python, env=compiler.get("env"),
                       toolchain=compiler["toolchain"] if python else "")
        self.pairs = [(Compiler(target, cache=cache.for_target(target, False, self.versions), **options),
                       Compiler(target, profile=True, cache=cache.for_target(target, True, self.versions),
                                **options)) for _ in range(max(1, pairs))]

    def run(self, parts: list[list]) -> pd.DataFrame:
        """The rows of each part's jobs, in the parts' order. Each pair takes the next part no pair has
        taken (give the largest first): a pair done early takes more, rather than waiting while
        another compiles a large part."""
        untaken, lock = iter(range(len(parts))), threading.Lock()
        done = [[] for _ in parts]

        def serve(pair):
            while True:
                with lock:
                    i = next(untaken, None)
                if i is None:
                    return
                progress = Progress(sum(len(job.cases) for job in parts[i]), log)
                done[i] = [row for job in parts[i]
                           for row in job_rows(job, *pair, progress, self.versions["libtpu_version"])]

        busy = self.pairs[:max(1, len(parts))]
        with concurrent.futures.ThreadPoolExecutor(len(busy)) as pool:
            list(pool.map(serve, busy))  # re-raises a pair's exception
        return frame([row for part in done for row in part], self.versions)

    def close(self) -> None:
        for pair in self.pairs:
            for worker in pair:
                worker.__exit__(None, None, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
