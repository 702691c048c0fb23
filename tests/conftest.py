import fcntl
import json
import os
import shutil
import time
from pathlib import Path

# Tests run JAX on the CPU even where libtpu is installed (it is a pinned dependency).
os.environ["JAX_PLATFORMS"] = "cpu"

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import runs  # noqa: E402
import session_values  # noqa: E402

from tpu_matmul_repro.analysis.aggregate import combine  # noqa: E402
from tpu_matmul_repro.experiments.core.schema import frame as to_frame  # noqa: E402


def pytest_collection_modifyitems(items):
    """The order in which pyproject's `--dist loadgroup` hands tests to the two workers (round robin at
    first, then as they free up): one test on the session's tiny run, so that the first worker makes
    the tiny run at once while the other starts on a group; the files that keep their tests together
    (an `xdist_group` mark); the other tests on the tiny run, made by then, so no worker waits for it;
    the other slow tests, in the files' order; then the rest, so that both workers end on short tests
    instead of one being handed a minute-long run at the end."""
    first_on_tiny_run = next((item for item in items if "tiny_run" in item.fixturenames
                              and not item.get_closest_marker("xdist_group")), None)

    def order(item):
        if item is first_on_tiny_run:
            return -1
        if item.get_closest_marker("xdist_group"):
            return 0
        if "tiny_run" in item.fixturenames:
            return 1
        return 2 if item.get_closest_marker("slow") else 3

    items.sort(key=order)


TIMELINE = os.environ.get("TEST_TIMELINE")  # a file: see pytest_runtest_logreport
_timeline_here = False  # this process runs tests (an xdist worker, or pytest without workers)


def pytest_configure(config):
    global _timeline_here
    _timeline_here = bool(TIMELINE) and (hasattr(config, "workerinput")
                                         or not getattr(config.option, "numprocesses", 0))


_cpu_at_last_report = None  # this process's and its waited-for children's CPU seconds, at the last report


def _cpu_seconds() -> float:
    import resource

    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def pytest_runtest_logreport(report):
    """With TEST_TIMELINE=file, a JSON line per phase (setup, call, teardown) of each test as it ends:
    the worker, the end time, the duration and the CPU seconds since the worker's previous line, its
    own and its finished subprocesses' (the suite keeps both cores busy, so CPU is what it costs).
    tools/test_timeline.py reads the file: which worker ran what when, and where one waited for the
    other (a long setup)."""
    global _cpu_at_last_report
    if _timeline_here:
        cpu = _cpu_seconds()
        spent = cpu - _cpu_at_last_report if _cpu_at_last_report is not None else None
        _cpu_at_last_report = cpu
        with open(TIMELINE, "a") as f:
            f.write(json.dumps(dict(worker=os.environ.get("PYTEST_XDIST_WORKER", "main"),
                                    test=report.nodeid, phase=report.when, end=time.time(),
                                    seconds=report.duration, cpu=spent)) + "\n")


def made_once(name: str, make, tmp_path_factory) -> Path:
    """`make(folder)` once per test session however many pytest-xdist workers ask, and that folder:
    the first worker to ask makes it under a lock in the temporary folder the workers share, the
    others wait for it (pytest-xdist's "Making session-scoped fixtures execute only once"). A make that
    fails marks nothing done, so the next worker to ask tries again and fails with its own message."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # popen-gwN/.. under xdist
    folder, done = shared / name, shared / f"{name}.done"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # a failed attempt's leftovers
            make(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session", autouse=True)
def _values_made_once_per_session(tmp_path_factory):
    """session_values.made_once_per_session shares its values between this session's workers."""
    session_values.made_in_folder = lambda name, make: made_once(name, make, tmp_path_factory)
    yield
    session_values.made_in_folder = None


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """A copy of the repository with a finished run of the tiny config (tests/runs.py), made once for
    the whole session and shared by the end-to-end tests. Read it; a test that changes it works on
    `runs.copy_run(tiny_run, ...)`, so every test sees it as it was made."""
    return made_once("tiny_run", runs.make_tiny_run, tmp_path_factory)

TOLERANCES = {"float32": 1e-5, "bfloat16": 1e-2, "int8": 0}


@pytest.fixture
def tolerances():
    return dict(TOLERANCES)


VERSIONS = {"jax_version": "0.10.2", "libtpu_version": "0.0.42.1", "git_sha": "abc"}
MiB = 2**20


def row(experiment, kernel, dtype, size, blocks=(None, None, None), status="ok", tflops=np.nan, search=False,
        vmem=None, limit=16 * MiB, raised=False, source="estimate"):
    bm, bk, bn = blocks
    flops = 2 * size**3
    return dict(source=source, target="v5e", device_kind="TPU v5 lite", experiment=experiment, kernel=kernel,
                dtype=dtype, m=size, k=size, n=size, bm=bm, bk=bk, bn=bn, status=status,
                tflops=tflops if status == "ok" else np.nan, search=search, vmem_bytes=vmem,
                vmem_limit_bytes=limit, oom_limit_bytes=limit if status == "vmem_oom" else None,
                raised_limit=raised, hbm_bytes=flops // 100, peak_tflops=197.0, hbm_bytes_per_s=8.2e11,
                error="", cycles_method="")


@pytest.fixture(scope="session")
def table():
    """A small tidy table: estimates with failures and raised limits, a block search, published rows."""
    rows = [
        row("v1", "v1", "float32", 1024, tflops=90.0, vmem=12 * MiB),
        row("v1", "v1", "float32", 2048, status="vmem_oom", vmem=int(48.82 * MiB)),
        row("v1", "v1", "float32", 2048, tflops=120.0, vmem=49 * MiB, limit=64 * MiB, raised=True),
        row("v5", "v5", "bfloat16", 1024, (512, 1024, 1024), tflops=100.0, vmem=8 * MiB),
        row("v5", "v5", "bfloat16", 2048, (512, 1024, 1024), tflops=170.0, vmem=11 * MiB),
        row("v5", "v5", "bfloat16", 2048, (1024, 1024, 1024), status="vmem_oom", vmem=19 * MiB),
        row("v5", "v5", "bfloat16", 2048, (256, 512, 512), tflops=150.0, search=True, vmem=3 * MiB),
        row("v5", "v5", "bfloat16", 2048, (256, 1024, 512), tflops=160.0, search=True, vmem=4 * MiB),
        row("v5", "v5", "bfloat16", 2048, (512, 512, 512), status="vmem_oom", search=True, vmem=17 * MiB),
        row("xla", "xla", "float32", 1024, tflops=100.0),
        row("xla", "xla", "float32", 2048, tflops=150.0),
        row("xla", "xla", "bfloat16", 1024, tflops=120.0),
        row("xla", "xla", "bfloat16", 2048, tflops=180.0),
    ]
    estimates = to_frame(rows, VERSIONS)
    published = to_frame([
        row("v5", "v5", "bfloat16", 2048, (512, 1024, 1024), tflops=78.4, source="published", limit=None),
        row("v5", "v5", "bfloat16", 2048, (1024, 1024, 1024), status="failed", source="published",
            limit=None),
        row("v1", "v1", "float32", 2048, status="failed", source="published", limit=None),
    ], {}).drop(columns=["jax_version", "libtpu_version", "git_sha"])
    return combine([estimates], published)
