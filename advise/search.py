"""Compile a problem's candidate blocks and XLA's matmul for a target at a scoped-VMEM limit and model
them with the pipeline's own code: a branch and bound on the modelled time, whose bound (the model
without compiler cycles) prunes what can neither be the best block nor tie (docs/advisor.md)."""
import contextlib
import dataclasses
import itertools
import logging
import math

import numpy as np
import pandas as pd

from tpu_matmul_repro.advise.candidates import candidates
from tpu_matmul_repro.advise.workers import Workers
from tpu_matmul_repro.analysis import model_columns
from tpu_matmul_repro.analysis import timing_model as tm
from tpu_matmul_repro.experiments.compile_study.study import (
    DOMINATED,
    TWO_STEP_VMEM,
    job_versions,
    single_step_axes,
)
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.chips import MiB, chip
from tpu_matmul_repro.experiments.core.jobs import Job
from tpu_matmul_repro.experiments.core.schema import INTERVAL_COLUMNS
from tpu_matmul_repro.experiments.core.traffic import min_vmem_bytes
from tpu_matmul_repro.experiments.core.units import flops
from tpu_matmul_repro.kernels import is_pallas
from tpu_matmul_repro.kernels.spec import BLOCKS
from tpu_matmul_repro.report.advice import BUDGET_SPENT, PRUNED

log = logging.getLogger(__name__)
FIRST = 6  # candidates compiled before the bound prunes the rest
EXACT_FIRST = 4 * FIRST  # candidates whose exact bound orders the first batch
WAVE = 8  # candidates per pair of workers in each later batch
FIT = "published v5e"
CASE_FIELDS = ("m", "k", "n", "bm", "bk", "bn")


def _row(case: Case, target: str) -> pd.Series:
    return pd.Series(dict(kernel=case.kernel, dtype=case.dtype, m=case.m, k=case.k, n=case.n, bm=case.bm,
                          bk=case.bk, bn=case.bn, target=target, est_cycles=0.0))


def cheap_bound(case: Case, target: str, k: tm.Constants) -> float:
    """A lower bound on the modelled device time from counts alone: the steps' core or the operands and
    output moved once, whichever is longer, plus the fixed costs of the steps and the fewest DMAs."""
    c = chip(target)
    steps = math.prod(case.grid())
    overlapped = k.overlapped_step_cycles
    if case.dtype == "float32":
        overlapped += k.float32_cycles_per_kib * tm.operand_kib(case)
    factor = k.float32_factor if case.dtype == "float32" else 1.0
    work = factor * flops(case.m, case.k, case.n) / c.peak_flops[case.dtype] + steps * overlapped / c.clock_hz
    moved = tm.features(_row(Case("xla", case.dtype, case.m, case.k, case.n), target), cycles=0.0).min_bytes
    rows, cols, depth = case.grid()
    fewest_dmas = rows * cols + rows * depth + depth * cols
    fixed = steps * k.step_cycles + fewest_dmas * k.dma_cycles
    return max(work, moved / (k.bandwidth_fraction * c.hbm_bytes_per_s)) + fixed / c.clock_hz


def lower_bound(case: Case, target: str, k: tm.Constants) -> float:
    """The model without compiler cycles (the chip's peak and bandwidth alone), step by step."""
    return tm.device_seconds(tm.features(_row(case, target), cycles=0.0), k)


# libtpu versions seen to ask two buffers of each block (and v5's accumulator once) for every grid with
# more than one step along every axis (docs/advisor.md); older ones gave large float32 blocks one.
DOUBLE_BUFFERED_LIBTPU = ("0.0.42.1", "0.0.50.1", "0.0.52")
DOUBLE_BUFFER_BOUND = "double_buffer_bound"  # vmem_method of a candidate out of VMEM by that bound


def double_buffered_bytes(case: Case) -> int:
    """Two buffers of each block, and v5's accumulator once."""
    acc = case.bm * case.bn * 4 if case.facts.accumulator else 0
    return 2 * (min_vmem_bytes(case) - acc) + acc


def vmem_floor(case: Case, libtpu: str) -> tuple[int, str]:
    """(a lower bound on the VMEM the compiler asks for `case`, how it was found): the blocks' own
    buffers, or two of each where libtpu double-buffers them and no grid axis has a single step."""
    if (libtpu in DOUBLE_BUFFERED_LIBTPU and case.facts.grid == BLOCKS
            and not any(single_step_axes(case))):
        return double_buffered_bytes(case), DOUBLE_BUFFER_BOUND
    return min_vmem_bytes(case), "block_bound"


def uncompiled_rows(target: str, cases, limit: int, status: str, fields) -> pd.DataFrame:
    """Rows of `cases` left without a compile; `fields(case)` says why."""
    c = chip(target)
    return pd.DataFrame([dict(
        source="estimate", target=target, device_kind=c.device_kind, kernel=x.kernel, dtype=x.dtype, m=x.m,
        k=x.k, n=x.n, bm=x.bm, bk=x.bk, bn=x.bn, status=status, vmem_limit_bytes=limit, **fields(x))
        for x in cases])


def oom_rows(target: str, cases, limit: int, libtpu: str = "") -> pd.DataFrame:
    def why(x):
        need, method = vmem_floor(x, libtpu)
        what = ("its blocks alone need" if method == "block_bound"
                else "two buffers of each of its blocks (libtpu's pipelining) need")
        return dict(oom_limit_bytes=limit, vmem_bytes=need, vmem_method=method,
                    error=f"not compiled: {what} {need / MiB:.2f} MiB, more than the scoped limit of "
                          f"{limit / MiB:.0f} MiB (a lower bound from the block shapes)")

    return uncompiled_rows(target, cases, limit, "vmem_oom", why)


def aspect_of(shape) -> tuple[float, float]:
    m, k, n = shape
    return round(m / k, 6), round(n / k, 6)


def xla_context(baseline, dtype: str, shape) -> list[Case]:
    """The config's XLA baseline problems of the shape's dtype and aspect smaller than it: what the
    monotone envelope compares it with in the compile study's table."""
    work = flops(*shape)
    return sorted({c for c in baseline if c.dtype == dtype and aspect_of((c.m, c.k, c.n)) == aspect_of(shape)
                   and flops(c.m, c.k, c.n) < work}, key=lambda c: flops(c.m, c.k, c.n))


def compile_cases(workers: Workers, target: str, cases, compiler: dict, settings: dict,
                  limit_mib: int | None) -> pd.DataFrame:
    """The compile study's rows of `cases`: at the default limit, and at `limit_mib` too where they run
    out at the default; blocks whose vmem_floor exceeds the default at `limit_mib` only."""
    default = chip(target).default_vmem_limit_bytes
    libtpu = job_versions(compiler.get("versions"))["libtpu_version"]
    beyond = tuple(c for c in cases if limit_mib and c.facts.pallas and vmem_floor(c, libtpu)[0] > default)
    parts = split_for_pairs([c for c in cases if c not in beyond])
    extra = split_for_pairs(list(beyond))
    common = dict(target=target, experiment="advice", toolchain=compiler["toolchain"],
                  static_profile=compiler["static_profile"],
                  two_step_vmem=(target, libtpu) in TWO_STEP_VMEM, **settings)

    def jobs(rest, over):
        pallas = tuple(c for c in rest if c.facts.pallas)
        raised = dict(raise_limits_for=pallas, raised_limits_mib=(limit_mib,)) if limit_mib else {}
        out = [Job(cases=tuple(rest), **common, **raised)] if rest else []
        return out + ([Job(cases=tuple(over), limit_mib=limit_mib, **common)] if over else [])

    batches = [jobs(rest, over) for rest, over in itertools.zip_longest(parts, extra, fillvalue=[])]
    frames = [workers.run([b for b in batches if b])]
    if beyond:
        frames.append(oom_rows(target, beyond, default, libtpu))
    return pd.concat(frames, ignore_index=True)


def split_for_pairs(cases: list) -> list[list]:
    """`cases` as the parts the pairs of workers take one at a time: XLA's together first, then each
    block shape alone, the largest first, so that no pair waits long at the batch's end."""
    xla = [case for case in cases if not case.facts.pallas]
    blocks = sorted((case for case in cases if case.facts.pallas),
                    key=lambda c: (-(c.bm * c.bk + c.bk * c.bn + c.bm * c.bn), c.bm, c.bk, c.bn))
    return ([xla] if xla else []) + [[case] for case in blocks]


def dominated(case: Case, out_of_vmem: list[Case]) -> Case | None:
    """A block shape out of VMEM at this limit that `case` is at least as large as along every axis,
    with single steps along the same axes (VMEM grows with each block edge, not with the grid)."""
    axes = single_step_axes(case)
    for other in out_of_vmem:
        if (other.bm <= case.bm and other.bk <= case.bk and other.bn <= case.bn
                and single_step_axes(other) == axes):
            return other
    return None


def dominated_rows(target: str, cases: dict, limit: int) -> pd.DataFrame:
    """Rows of `cases` ({case: the out-of-VMEM blocks it dominates}), not compiled."""
    def why(x):
        o = cases[x]
        return dict(oom_limit_bytes=limit, vmem_method=DOMINATED,
                    error=f"not compiled: its blocks are at least as large along every axis as "
                          f"({o.bm},{o.bk},{o.bn}), which ran out of VMEM at this limit, with single steps "
                          "along the same axes")

    return uncompiled_rows(target, cases, limit, "vmem_oom", why)


def fits_of(model) -> dict:
    """The advisor's model (the published fit and its refits) as model_columns.modelled takes it."""
    nan = tm.Constants(*[math.nan] * len(tm.PARAMS))

    def fit(constants):
        return tm.Fit(constants, nan, model.band.n, math.nan, ()), "published"

    return {FIT: fit(model.constants)} | {model_columns.without(figure): fit(constants)
                                          for figure, constants in model.refits.items()}


def band_factor(row) -> float:
    """The factor of a modelled row's 80 % band above its time: within it, two times tie."""
    return float(row.model_device_seconds_hi80 / row.model_device_seconds)


@dataclasses.dataclass(frozen=True)
class Fastest:
    """The fastest of a problem's modelled rows (the best block, or XLA where it is modelled faster):
    the rows within `tie_seconds` tie with it (the recommendation's set, the table's tie column)."""

    xla: bool
    seconds: float
    factor: float  # its 80 % band's factor above its time
    best_block_seconds: float  # the best block's time (nan: none fits)

    @property
    def tie_seconds(self) -> float:
        return self.seconds * self.factor

    @property
    def reach(self) -> float:
        """The longest lower bound a candidate may have and still tie or be the best block (inf: none yet)."""
        if math.isnan(self.best_block_seconds):
            return math.inf
        return max(self.tie_seconds, self.best_block_seconds)


def fastest_of(pallas: pd.DataFrame, xla: pd.DataFrame) -> Fastest | None:
    """The fastest of the blocks' and XLA's modelled rows; None where neither has a time."""
    timed = pallas[(pallas.status == "ok") & pallas.model_device_seconds.notna()]
    timed = timed.sort_values(["model_device_seconds", "bm", "bk", "bn"])
    xla = xla[xla.model_device_seconds.notna()]
    best = timed.iloc[0] if len(timed) else None
    t_best = math.nan if best is None else float(best.model_device_seconds)
    if len(xla) and (best is None or float(xla.model_device_seconds.iloc[0]) < t_best):
        row = xla.iloc[0]
        return Fastest(True, float(row.model_device_seconds), band_factor(row), t_best)
    if best is None:
        return None
    return Fastest(False, t_best, band_factor(best), t_best)


def modelled(rows: pd.DataFrame, model) -> pd.DataFrame:
    return model_columns.modelled(rows.reset_index(drop=True), fits_of(model), model.band)


def _key(case: Case) -> tuple:
    return (case.kernel, case.m, case.k, case.n, case.bm, case.bk, case.bn)


def _keys(rows: pd.DataFrame) -> list[tuple]:
    def whole(column):
        return [None if pd.isna(v) else int(v) for v in rows[column]]

    return list(zip(rows.kernel, *(whole(c) for c in ("m", "k", "n", "bm", "bk", "bn")), strict=True))


def at_limit(rows: pd.DataFrame, limit: int) -> pd.DataFrame:
    """One row per configuration: the smallest limit up to `limit` it fits at, else the highest tried;
    `limits_tried` says what each limit gave."""
    rows = rows.reset_index(drop=True)
    group = pd.Series(pd.factorize(pd.Series(_keys(rows)))[0], index=rows.index)
    order = rows.assign(_g=group, _tried=[_tried(r) for r in rows.itertuples()])
    order = order.sort_values(["_g", "vmem_limit_bytes"], kind="stable")
    fits = order[(order.status == "ok") & (order.vmem_limit_bytes <= limit)].groupby("_g").head(1)
    last = order.groupby("_g").tail(1)
    chosen = pd.concat([fits, last[~last._g.isin(fits._g)]]).sort_values("_g")
    tried = order.groupby("_g")._tried.agg("; ".join)
    return chosen.assign(limits_tried=tried.loc[chosen._g].to_numpy()).drop(columns=["_g", "_tried"]) \
        .reset_index(drop=True)


def _tried(r) -> str:
    at = f"{r.vmem_limit_bytes / MiB:.0f} MiB"
    vmem = "" if pd.isna(r.vmem_bytes) else f"{r.vmem_bytes / MiB:.1f} MiB"
    if r.vmem_method == "block_bound":
        return f"{at}: out of VMEM, not compiled (its blocks alone need {vmem})"
    if r.vmem_method == DOUBLE_BUFFER_BOUND:
        return f"{at}: out of VMEM, not compiled (two buffers of its blocks need {vmem})"
    if r.vmem_method == DOMINATED:
        return f"{at}: out of VMEM, not compiled (dominated)"
    if r.status == "ok":
        return f"{at}: ok" + (f", uses {vmem}" if vmem else "")
    if r.status == "vmem_oom":
        return f"{at}: out of VMEM" + (f", asks {vmem}" if vmem else "")
    return f"{at}: {r.status}"


def next_batch(todo: list, bounds: dict, cheap: dict, reach: float, target: str,
               k: tm.Constants, pairs: int, limit: int) -> tuple[list, list]:
    """(the cases to compile next, the rest): until a block has a time, the FIRST smallest exact bounds;
    then those within `reach`, smaller blocks first, WAVE a pair at a time, so that a wave's verdicts
    and times can spare the next wave's compiles."""
    if math.isinf(reach):
        # first those whose blocks leave room to double-buffer them (most kernels need it): a first
        # time found quickly, rather than the largest blocks' out-of-VMEM verdicts; only an order
        likely = [case for case in todo if 2 * min_vmem_bytes(case) <= limit] or todo
        for case in likely[:EXACT_FIRST]:
            if case not in bounds:
                bounds[case] = lower_bound(case, target, k)
        batch = sorted(likely[:EXACT_FIRST], key=lambda case: (bounds[case], case.bm * case.bk * case.bn))
        chosen = set(batch[:FIRST])
        return batch[:FIRST], [case for case in todo if case not in chosen]
    within = [case for case in todo if cheap[case] <= reach]
    for case in within:
        if case not in bounds:
            bounds[case] = lower_bound(case, target, k)
    within = sorted((case for case in within if bounds[case] <= reach),
                    key=lambda case: (case.bm * case.bk * case.bn, bounds[case]))
    chosen = set(within[:WAVE * pairs])
    return within[:WAVE * pairs], [case for case in todo if case not in chosen]


@dataclasses.dataclass
class SearchResult:
    """What a search found for one shape on one target."""

    rows: pd.DataFrame  # one per candidate (at the limit), modelled; m, k, n the shape asked
    xla: pd.DataFrame  # XLA's matmul at the shape, modelled
    limit: int  # the scoped-VMEM limit ranked at, bytes
    counts: dict  # candidates, out of VMEM by their blocks, compiled, pruned


def search(shape, dtype: str, target: str, kernel: str, model, compiler: dict, settings: dict, *,
           vmem_limit_bytes: int | None = None, baseline=(), workers: int = 1,
           pool: Workers | None = None) -> SearchResult:
    """The candidates of one problem on one target ranked at a limit (default: the chip's), modelled;
    compiled by `pool` (the target's workers, kept across searches), else by workers of its own."""
    k = model.constants
    c = chip(target)
    limit = vmem_limit_bytes or c.default_vmem_limit_bytes
    limit_mib = limit // MiB if limit != c.default_vmem_limit_bytes else None
    found = candidates(kernel, dtype, shape, target)
    of_case = {x.case: x for x in found}
    libtpu = job_versions(compiler.get("versions"))["libtpu_version"]
    sure_oom = [x.case for x in found if vmem_floor(x.case, libtpu)[0] > limit]
    todo = [x.case for x in found if vmem_floor(x.case, libtpu)[0] <= limit]
    cheap = {case: cheap_bound(case, target, k) for case in todo}
    todo.sort(key=lambda case: (cheap[case], case.bm * case.bk * case.bn))
    bounds = {}
    pending_xla = [*xla_context(baseline, dtype, shape), Case("xla", dtype, *shape)]
    frames = [oom_rows(target, sure_oom, limit, libtpu)] if sure_oom else []
    fastest = None
    own = contextlib.nullcontext(pool) if pool else Workers(target, compiler, settings["timeout_s"], workers)
    with own as pairs:
        while todo or pending_xla:
            if pairs.spent() and not pending_xla:  # the time budget ran out: the rest is not compiled
                frames.append(uncompiled_rows(target, todo, limit, "timeout",
                                              lambda _: dict(error=BUDGET_SPENT)))
                todo = []
                times = at_limit(modelled(pd.concat(frames, ignore_index=True), model), limit)
                break
            reach = fastest.reach if fastest else math.inf
            batch, todo = next_batch(todo, bounds, cheap, reach, target, k, workers, limit)
            if not batch and not pending_xla:
                break
            frames.append(compile_cases(pairs, target, batch + pending_xla, compiler, settings, limit_mib))
            pending_xla = []
            times = at_limit(modelled(pd.concat(frames, ignore_index=True), model), limit)
            out = times[(times.status == "vmem_oom") & times.vmem_method.isin(["compiled", "representative"])]
            out = [Case(*r) for r in zip(out.kernel, out.dtype, *(out[c].astype(int) for c in CASE_FIELDS),
                                         strict=True)]
            skipped = {case: o for case in todo if (o := dominated(case, out))}
            if skipped:
                todo = [case for case in todo if case not in skipped]
                frames.append(dominated_rows(target, skipped, limit))
                times = at_limit(modelled(pd.concat(frames, ignore_index=True), model), limit)
            fastest = fastest_of(times[is_pallas(times.kernel)], at_shape(times, shape))
    table = times  # the last batch's, modelled from every frame: the loop ends on one
    compiled = set(_keys(table))
    pruned = [case for case in of_case if case not in set(sure_oom) and _key(case) not in compiled]
    skipped = int((table.vmem_method == DOMINATED).sum())
    counts = dict(candidates=len(found), vmem_bound=len(sure_oom), dominated=skipped,
                  compiled=len(found) - len(sure_oom) - len(pruned) - skipped, pruned=len(pruned))
    log.info("%s %s: %d candidates, %d out of VMEM by their blocks' buffers, %d as large as blocks out of "
             "VMEM, %d compiled, %d pruned by the bound", target, "x".join(map(str, shape)),
             *counts.values())
    if pruned:
        table = pd.concat([table, pd.DataFrame([dict(
            source="estimate", target=target, kernel=x.kernel, dtype=x.dtype, m=x.m, k=x.k, n=x.n, bm=x.bm,
            bk=x.bk, bn=x.bn, status=PRUNED, vmem_limit_bytes=limit,
            lower_bound_seconds=bounds.get(x, cheap[x]),
            error=f"not compiled: even without compiler cycles the model gives "
                  f"{bounds.get(x, cheap[x]) * 1e3:.3f} ms, beyond {reach_words(fastest)}: it can neither be "
                  "the best block nor tie") for x in pruned])], ignore_index=True)
    pallas = table[is_pallas(table.kernel)].copy()  # not XLA at any precision: its context rows
    xla = at_shape(table, shape).copy()
    return SearchResult(as_asked(pallas, shape), xla.reset_index(drop=True), limit, counts)


def at_shape(rows: pd.DataFrame, shape) -> pd.DataFrame:
    """XLA's rows at the shape asked (not its smaller context problems)."""
    return rows[(rows.kernel == "xla") & (rows.m == shape[0]) & (rows.k == shape[1]) & (rows.n == shape[2])]


def reach_words(fastest: Fastest) -> str:
    """The reach of a search, said: what a pruned candidate's bound is beyond."""
    which = "XLA" if fastest.xla else "the best block"
    tie = (f"the {fastest.tie_seconds * 1e3:.3f} ms within which a time ties with the fastest ({which}, "
           f"{fastest.seconds * 1e3:.3f} ms x{fastest.factor:.2f}, its 80 % interval)")
    if fastest.reach > fastest.tie_seconds:
        return f"{tie} and the best block's {fastest.best_block_seconds * 1e3:.3f} ms"
    return tie


def as_asked(rows: pd.DataFrame, shape) -> pd.DataFrame:
    """Candidate rows on the problem asked: the padded problem in padded_shape, and every TFLOP/s column
    counting the shape's own FLOPs (the padding's are work, not output)."""
    rows = rows.reset_index(drop=True)
    kernel_shape = list(zip(rows.m.astype(int), rows.k.astype(int), rows.n.astype(int), strict=True))
    rows["padded_shape"] = ["" if s == tuple(shape) else "x".join(map(str, s)) for s in kernel_shape]
    share = np.array([flops(*shape) / flops(*s) for s in kernel_shape], dtype=float)
    rate_columns = [col for col in ("tflops", "model_device_tflops", "model_post_tflops", *INTERVAL_COLUMNS)
                    if "tflops" in col and col in rows]
    for col in rate_columns:
        rows[col] = rows[col].astype(float) * share
    rows["m"], rows["k"], rows["n"] = shape
    return rows
