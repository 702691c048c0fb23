"""Every figure of a run in one job: one Python, one read of the table, one import of matplotlib.

Drawing one figure takes 1-4 s; starting a process, importing pandas and matplotlib and reading the
table took ~1.5 s more per figure when each figure was a job of its own (26 jobs, ~40 s of a cold
default run). With more than one process allowed (the job's Snakemake threads), figures are drawn in
that many worker processes, the slowest kinds first.
"""
import warnings
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from figures.catalog import render

# Drawn first when figures are shared among processes: the slowest kinds (most panels, most points).
SLOWEST_FIRST = ("search", "generations", "experiment", "then_and_now", "fidelity", "roofline", "vmem")

_df = None  # the table, read once per worker process


def _load(table) -> None:
    global _df
    from experiments.analysis.runs import read_results

    _df = read_results(table)  # each target's latest measured run, no raw samples


def _draw(name: str, spec: tuple, directory: str, primary, served) -> list[Path]:
    kind, args = spec
    with warnings.catch_warnings():
        # A missing glyph would print boxes in a published figure: make it an error.
        warnings.filterwarnings("error", message=".*[Gg]lyph.*missing.*")
        return render(_df, name, kind, args, Path(directory), primary=primary, served=served)


def render_all(table, specs: dict, directory, *, primary=None, served=None, processes: int = 1) -> list[Path]:
    """Draw every figure of `specs` (name -> (kind, arguments), figures/catalog.py:figure_specs) from the
    table at `table` into `directory`, in `processes` processes; returns the paths written, in the
    order of `specs`."""
    if processes < 1:
        raise ValueError(f"{processes=} must be at least 1")
    names = list(specs)
    args = (str(directory), primary, served)
    if processes == 1 or len(names) < 2:
        _load(table)
        return [p for name in names for p in _draw(name, specs[name], *args)]
    order = sorted(names, key=lambda n: SLOWEST_FIRST.index(specs[n][0])
                   if specs[n][0] in SLOWEST_FIRST else len(SLOWEST_FIRST))
    # spawn: a clean interpreter per worker (no forked matplotlib or thread state)
    with ProcessPoolExecutor(min(processes, len(names)), mp_context=get_context("spawn"),
                             initializer=_load, initargs=(str(table),)) as pool:
        futures = {name: pool.submit(_draw, name, specs[name], *args) for name in order}
        return [p for name in names for p in futures[name].result()]
