"""Worker processes start without forking a Python that may have jax loaded (issue 39): jax is
multithreaded, and os.fork() copies a process with its threads stopped mid-flight ("os.fork() was
called ... JAX is multithreaded, so this will likely lead to a deadlock"). multiprocessing's "fork"
start method forks, and so does subprocess with a preexec_fn (it runs Python's at-fork hooks);
subprocess without one, and the "spawn" and "forkserver" start methods, start a fresh interpreter."""
import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from syntax_trees import syntax_tree

ROOT = Path(__file__).resolve().parents[1]
# multiprocessing's process makers that take the default start method ("fork" on Linux up to 3.13)
DEFAULT_CONTEXT_MAKERS = {"Pool", "Process", "Manager"}


def python_files() -> list[Path]:
    skipped = {"site", "build", "results", "logs", "__pycache__"}
    return sorted(p for p in ROOT.rglob("*.py")
                  if not any(part.startswith(".") or part in skipped or part.endswith(".egg-info")
                             for part in p.relative_to(ROOT).parts))


def forks(tree: ast.AST) -> list[str]:
    """What in a module forks: os.fork, a preexec_fn, the "fork" start method, a process pool or
    process on multiprocessing's default context."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("fork", "forkpty") and getattr(
                node.value, "id", "") == "os":
            found.append(f"line {node.lineno}: os.{node.attr}")
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", getattr(node.func, "id", ""))
        owner = getattr(getattr(node.func, "value", None), "id", "")
        keywords = {k.arg for k in node.keywords}
        if "preexec_fn" in keywords:
            found.append(f"line {node.lineno}: preexec_fn")
        if (name in ("get_context", "set_start_method") and node.args
                and getattr(node.args[0], "value", None) == "fork"):
            found.append(f"line {node.lineno}: {name}('fork')")
        if name == "ProcessPoolExecutor" and "mp_context" not in keywords:
            found.append(f"line {node.lineno}: ProcessPoolExecutor without mp_context")
        if name in DEFAULT_CONTEXT_MAKERS and owner == "multiprocessing":
            found.append(f"line {node.lineno}: multiprocessing.{name} (the default start method)")
    return found


def test_no_code_of_the_project_forks_python():
    found = {str(path.relative_to(ROOT)): forks(syntax_tree(path))
             for path in python_files()}
    assert {path: what for path, what in found.items() if what} == {}


@pytest.mark.parametrize("source, expected", [
    ("import multiprocessing\nmultiprocessing.get_context('fork').Pool(2)", ["get_context('fork')"]),
    ("import subprocess\nsubprocess.Popen(['true'], preexec_fn=print)", ["preexec_fn"]),
    ("from concurrent.futures import ProcessPoolExecutor\nProcessPoolExecutor(2)",
     ["ProcessPoolExecutor without mp_context"]),
    ("import multiprocessing\nmultiprocessing.Pool(2)", ["multiprocessing.Pool (the default start method)"]),
    ("import os\nos.fork()", ["os.fork"]),
    ("import multiprocessing\nmultiprocessing.get_context('spawn').Pool(2)", []),
])
def test_the_check_finds_each_way_to_fork(source, expected):
    assert [f.split(": ", 1)[1] for f in forks(ast.parse(source))] == expected


@pytest.mark.slow
@pytest.mark.compiler
def test_a_compile_worker_started_after_jax_does_not_fork_it():
    """In a process whose jax backends are up (the suite's workers, after any jax test), starting a
    compile worker warned of a deadlock: its preexec_fn forked. The worker still starts with Ctrl-C
    ignored (a Ctrl-C reaches the whole process group; the job that started it stops it)."""
    script = "\n".join([  # lines of a string, not import statements of this file (code_inputs reads those)
        "import signal, warnings",
        # Python installs its handler only where SIGINT is not ignored at start, and a shell's background
        # job starts ignoring it: the handler the worker must leave in place is set here, not inherited.
        "signal.signal(signal.SIGINT, signal.default_int_handler)",
        "import jax",
        "jax.devices()",
        "warnings.simplefilter('error', RuntimeWarning)  # jax's at-fork warning",
        "from tpu_matmul_repro.experiments.compile_study.tpu_compile import Compiler",
        "with Compiler('v5e') as compiler:",
        "    status = open(f'/proc/{compiler._start().pid}/status').read()",
        "    ignored = int(next(l for l in status.splitlines() if l.startswith('SigIgn:')).split()[1], 16)",
        "    print('ignores SIGINT' if ignored & (1 << (signal.SIGINT - 1)) else 'takes SIGINT')",
        "    print(compiler.platforms()['platforms'])",
        "print('handler kept' if signal.getsignal(signal.SIGINT) is signal.default_int_handler else 'lost')",
    ])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "os.fork()" not in done.stderr
    assert done.stdout.split("\n")[:3] == ["ignores SIGINT", "['cpu']", "handler kept"]
