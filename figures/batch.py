"""Every figure of a run in one job: one Python, one read of the table, one import of matplotlib (a job
per figure cost ~1.5 s more each); with several threads, worker processes, slowest kinds first."""
import os
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from tpu_matmul_repro.experiments.plan.studies import load as load_studies
from tpu_matmul_repro.figures.catalog import render

# Drawn first when figures are shared among processes: the slowest kinds (most panels, most points).
# Every kind of figures/catalog.py is here (tests/test_figures.py); a study's kinds come after experiment.
SLOWEST_FIRST = ("search", "generations", "experiment", "fidelity", "roofline", "vmem")


def _rank(kind: str) -> float:
    return SLOWEST_FIRST.index(kind) if kind in SLOWEST_FIRST else SLOWEST_FIRST.index("experiment") + 0.5

_df = None  # the table, in a worker process (read once by _start_worker)


def _read(table):
    from tpu_matmul_repro.analysis.runs import read_results

    return read_results(table)  # each target's latest measured run, no raw samples


def _start_worker(table, log_path, studies) -> None:
    """A worker's set-up: load the run's studies, read the table, its stderr into the job's log."""
    global _df
    load_studies(studies)
    if log_path:
        stream = open(log_path, "a", buffering=1)  # noqa: SIM115 (open for the process's life)
        os.dup2(stream.fileno(), 2)
        sys.stderr = stream
    _df = _read(table)


def _draw(df, name: str, spec: tuple, directory: str, primary, served, model) -> list[Path]:
    kind, args = spec
    with warnings.catch_warnings():
        # A missing glyph would print boxes in a published figure: make it an error.
        warnings.filterwarnings("error", message=".*[Gg]lyph.*missing.*")
        return render(_df if df is None else df, name, kind, args, Path(directory), primary=primary,
                      served=served, model=model)


def render_all(table, specs: dict, directory, *, primary=None, served=None, processes: int = 1,
               log_path=None, studies=(), model=None) -> list[Path]:
    """Draw every figure of `specs` from the table at `table` into `directory`, in `processes` processes;
    returns the paths written, in the order of `specs`."""
    if processes < 1:
        raise ValueError(f"{processes=} must be at least 1")
    load_studies(studies)
    names = list(specs)
    args = (str(directory), primary, served, model)
    if processes == 1 or len(names) < 2:
        df = _read(table)
        return [p for name in names for p in _draw(df, name, specs[name], *args)]
    order = sorted(names, key=lambda n: _rank(specs[n][0]))
    # spawn: a clean interpreter per worker (no forked matplotlib or thread state). It imports the
    # Snakemake script again as __mp_main__ (scripts/draw_figures.py guards its work with __main__).
    with ProcessPoolExecutor(min(processes, len(names)), mp_context=get_context("spawn"),
                             initializer=_start_worker,
                             initargs=(str(table), log_path, tuple(studies))) as pool:
        futures = {name: pool.submit(_draw, None, name, specs[name], *args) for name in order}
        return [p for name in names for p in futures[name].result()]
