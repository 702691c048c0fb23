"""The timing model of how the Pallas TPU pipeline runs a grid (a pipeline roofline with fitted
per-step costs), its features, and its least-squares fit to the post's published v5e numbers;
the form, the constants and the ablation that chose them: docs/timing-model.md."""
import dataclasses
import itertools

import numpy as np
import pandas as pd

from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.chips import CHIPS, POST_CHIP, chip
from tpu_matmul_repro.experiments.core.traffic import ITEMSIZE, hbm_bytes, min_vmem_bytes
from tpu_matmul_repro.experiments.core.traffic_cache import cached_windows
from tpu_matmul_repro.experiments.core.units import TERA, seconds_at
from tpu_matmul_repro.experiments.core.units import flops as flop_count
from tpu_matmul_repro.kernels import is_pallas
from tpu_matmul_repro.kernels.spec import WHOLE

PARAMS = ("dma_cycles", "call_seconds", "float32_cycles_per_kib", "overlapped_step_cycles")
UNITS = {"dma_cycles": "cycles", "call_seconds": "s", "float32_cycles_per_kib": "cycles/KiB",
         "overlapped_step_cycles": "cycles", "step_cycles": "cycles", "float32_factor": ""}
# Plausible ranges, enforced by the fit: per-DMA and per-step costs up to 2000 cycles (1.3 us at 1.5
# GHz); a per-call host overhead up to 10 ms; up to 20 cycles per KiB of float32 operands (a step's two
# float32 blocks read from VMEM and rounded to bfloat16 for the MXU, far below the VPU's rate).
LOWER = np.array([0.0, 0.0, 0.0, 0.0])
UPPER = np.array([2000.0, 1e-2, 20.0, 2000.0])
# Starting points of the fit (the model is piecewise smooth: several starts, the best one kept).
SCALE = np.array([100.0, 1e-4, 1.0, 100.0])  # typical magnitudes: the fit works in units of these
STARTS = (np.array([100.0, 1e-4, 0.5, 50.0]), np.array([70.0, 7e-5, 0.25, 35.0]),
          np.array([130.0, 1.3e-4, 1.0, 65.0]), np.array([40.0, 4e-5, 0.1, 20.0]),
          np.array([200.0, 2e-4, 2.0, 100.0]))
# Candidate constants the model holds at a neutral value, because the ablation shows that fitting them
# does not lower its out-of-sample error (docs/timing-model.md): {name: (lower, upper, starts)}.
PROFILE_SCALE = "profile_scale"
BANDWIDTH_FRACTION = "bandwidth_fraction"
ACCUMULATOR = "accumulator_cycles_per_kib"
STEP = "step_cycles"
DMA_LATENCY = "dma_latency_cycles"
MXU_FILL = "mxu_fill_rows"
FLOAT32_FACTOR = "float32_factor"
EXTRA = {BANDWIDTH_FRACTION: (0.05, 1.0, (1.0, 0.8, 0.5)), PROFILE_SCALE: (0.0, 2.0, (0.0, 0.5, 1.0)),
         ACCUMULATOR: (0.0, 20.0, (0.0, 1.0, 4.0)), STEP: (0.0, 2000.0, (0.0, 50.0, 200.0)),
         DMA_LATENCY: (0.0, 2000.0, (0.0, 50.0, 200.0)), MXU_FILL: (0.0, 1024.0, (0.0, 32.0, 128.0)),
         FLOAT32_FACTOR: (1.0, 6.0, (1.0, 1.5, 2.5))}
MATCH = ["experiment", "kernel", "dtype", "m", "k", "n", "bm", "bk", "bn"]
CONFIG = ["kernel", "dtype", "m", "k", "n", "bm", "bk", "bn"]
# An XLA estimate is flagged when its TFLOP/s falls more than this below that of a smaller size
# of the same target and dtype: FLOP per byte only rises with size, so a fall is the cost model's.
NONMONOTONIC_TOLERANCE = 0.02


class TooFewPoints(ValueError):
    """Fewer points than a fit of the model's constants can determine."""


@dataclasses.dataclass(frozen=True)
class Constants:
    dma_cycles: float
    call_seconds: float
    float32_cycles_per_kib: float
    overlapped_step_cycles: float
    step_cycles: float = 0.0  # held (EXTRA)
    bandwidth_fraction: float = 1.0  # held (EXTRA)
    profile_scale: float = 0.0  # held (EXTRA)
    float32_factor: float = 1.0  # held (EXTRA)
    accumulator_cycles_per_kib: float = 0.0  # held (EXTRA)
    dma_latency_cycles: float = 0.0  # held (EXTRA)
    mxu_fill_rows: float = 0.0  # held (EXTRA)

    @classmethod
    def of(cls, x) -> "Constants":
        return cls(**{p: float(v) for p, v in zip(PARAMS, x, strict=True)})

    def vector(self) -> np.ndarray:
        return np.array([getattr(self, p) for p in PARAMS])


@dataclasses.dataclass(frozen=True)
class Features:
    """What the model needs of one configuration on one target, independent of the constants."""

    xla: bool
    float32: bool  # a Pallas kernel on float32 operands
    flops: float
    est_cycles: float
    steps: int
    prologue_bytes: float
    epilogue_bytes: float
    window_bytes: np.ndarray  # distinct window sizes W ...
    window_counts: np.ndarray  # ... and how many steps have each
    window_dmas: np.ndarray  # DMAs issued in each distinct window (same order as window_bytes)
    dmas: float  # DMAs of the whole call (copies in and write-backs)
    operand_kib: float  # KiB of the operand blocks a step's dot reads (both, resident or new)
    rows: float  # rows of the left operand's block a dot streams through the MXU's weights
    accumulator_kib: float  # KiB of the accumulator read and written in VMEM per step (k revisits it)
    min_bytes: float  # XLA: operands once
    single_buffered: float  # share of the blocks' bytes without a second buffer (x in the docstring)
    clock_hz: float
    peak_flops: float
    hbm_bytes_per_s: float


def _get(row, name):
    """A field of a row given as a namedtuple (itertuples) or a Series."""
    return row[name] if isinstance(row, pd.Series) else getattr(row, name)


def _fields(row):
    return row.index if isinstance(row, pd.Series) else row._fields


def case_of(row) -> Case:
    blocks = [None if pd.isna(_get(row, b)) else int(_get(row, b)) for b in ("bm", "bk", "bn")]
    return Case(_get(row, "kernel"), _get(row, "dtype"), int(_get(row, "m")), int(_get(row, "k")),
                int(_get(row, "n")), *blocks)


_FEATURES: dict = {}  # (case, target, cycles, vmem) -> Features


def single_buffered(case: Case, vmem_bytes) -> float:
    """The share of a grid's block bytes the compiler's VMEM request gives no second buffer (0 if unknown);
    the accumulator scratch (v5) is counted once: it is never copied."""
    if case.facts.grid == WHOLE or vmem_bytes is None or pd.isna(vmem_bytes):  # no grid, nothing to buffer
        return 0.0
    once = min_vmem_bytes(case)  # one buffer of each block, plus the accumulator
    accumulator = case.bm * case.bn * 4 if case.facts.accumulator else 0
    blocks = once - accumulator
    return float(np.clip(1.0 - (float(vmem_bytes) - once) / blocks, 0.0, 1.0))


def model_vmem(row):
    """The VMEM request the buffering is read from: model_vmem_bytes (reference_points), else the row's."""
    if "model_vmem_bytes" in _fields(row) and pd.notna(_get(row, "model_vmem_bytes")):
        return _get(row, "model_vmem_bytes")
    return _get(row, "vmem_bytes") if "vmem_bytes" in _fields(row) else None


def features(row, cycles: float | None = None, vmem_bytes=None) -> Features:
    """The model's inputs for a table row, cached (large grids' step counts take milliseconds).
    `cycles` replaces est_cycles (0: the chip's peak and bandwidth alone); `vmem_bytes`: model_vmem(row)."""
    case, target = case_of(row), _get(row, "target")
    if cycles is None:  # reference points carry the cycles the model uses (model_cycles: the envelope)
        envelope = _get(row, "model_cycles") if "model_cycles" in _fields(row) else np.nan
        cycles = _get(row, "est_cycles") if pd.isna(envelope) else envelope
    cycles = np.nan if pd.isna(cycles) else float(cycles)  # a Pallas kernel's are not needed
    single = single_buffered(case, model_vmem(row) if vmem_bytes is None else vmem_bytes)
    key = (case, target, cycles, single)
    if key in _FEATURES:
        return _FEATURES[key]
    c = chip(target)
    common = dict(float32=case.dtype == "float32", flops=float(flop_count(case.m, case.k, case.n)),
                  est_cycles=cycles, single_buffered=single,
                  clock_hz=c.clock_hz, peak_flops=c.peak_flops[case.dtype], hbm_bytes_per_s=c.hbm_bytes_per_s)
    if not case.facts.pallas:  # XLA's own matmul: its cost model's cycles and its minimum traffic
        out = Features(xla=True, steps=1, prologue_bytes=0.0, epilogue_bytes=0.0, window_bytes=np.zeros(0),
                       window_counts=np.zeros(0), window_dmas=np.zeros(0), dmas=0.0, accumulator_kib=0.0,
                       rows=float(case.m), operand_kib=0.0, min_bytes=float(hbm_bytes(case)), **common)
    else:
        w = cached_windows(case)
        out = Features(xla=False, steps=w.steps, prologue_bytes=float(w.prologue_bytes),
                       epilogue_bytes=float(w.epilogue_bytes), window_bytes=np.array(w.window_bytes, float),
                       window_counts=np.array(w.window_counts, float),
                       window_dmas=np.array(w.window_dmas, float),
                       dmas=float(w.dmas), accumulator_kib=_accumulator_kib(case),
                       rows=float(case.m if case.bm is None else case.bm), operand_kib=operand_kib(case),
                       min_bytes=float(w.total_bytes), **common)
    _FEATURES[key] = out
    return out


def operand_kib(case: Case) -> float:
    """KiB of the two operand blocks one step's dot reads from VMEM (the whole operands without a grid)."""
    if case.facts.grid == WHOLE:
        return (case.m * case.k + case.k * case.n) * ITEMSIZE[case.dtype] / 1024
    return (case.bm * case.bk + case.bk * case.bn) * ITEMSIZE[case.dtype] / 1024


def _accumulator_kib(case: Case) -> float:
    """KiB of float32 accumulator a step reads and writes in VMEM where the k axis revisits it."""
    if case.facts.grid == WHOLE or case.bk is None or case.bk >= case.k:
        return 0.0
    return 2 * case.bm * case.bn * 4 / 1024


class Stack:
    """Features of many configurations as arrays (padded with empty windows), evaluated at once."""

    def __init__(self, feats: list[Features]):
        def column(name):
            return np.array([getattr(f, name) for f in feats], dtype=float)

        for name in ("flops", "est_cycles", "steps", "prologue_bytes", "epilogue_bytes", "dmas",
                     "operand_kib", "rows", "accumulator_kib", "min_bytes", "single_buffered", "clock_hz",
                     "peak_flops", "hbm_bytes_per_s"):
            setattr(self, name, column(name))
        self.xla = np.array([f.xla for f in feats], dtype=bool)
        self.float32 = np.array([f.float32 for f in feats], dtype=bool)
        lengths = np.array([len(f.window_bytes) for f in feats], dtype=int)
        width = int(lengths.max(initial=0))
        self.window_bytes, self.window_counts, self.window_dmas = (np.zeros((len(feats), width))
                                                                   for _ in range(3))
        for i, f in enumerate(feats):
            self.window_bytes[i, :lengths[i]] = f.window_bytes
            self.window_counts[i, :lengths[i]] = f.window_counts
            self.window_dmas[i, :lengths[i]] = f.window_dmas
        self._lengths = lengths


def _row_sums(terms: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each row's np.sum over its first lengths[i] terms, to the bit (numpy adds 8 or more pairwise)."""
    total = np.zeros(len(terms))
    for j in range(terms.shape[1]):
        total = total + terms[:, j] if j else terms[:, 0].copy()
    for i in np.flatnonzero(lengths >= 8):
        total[i] = np.sum(terms[i, :lengths[i]])
    return total


def device_seconds_of(s: Stack, k: Constants) -> np.ndarray:
    """Modelled device time of one call of each configuration (docs/timing-model.md)."""
    bw = k.bandwidth_fraction * s.hbm_bytes_per_s
    xla = np.fmax(np.fmax(s.flops / s.peak_flops, s.est_cycles / s.clock_hz), s.min_bytes / bw)  # fmax: NaN
    dot = s.flops / s.steps / s.peak_flops                                        # cycles are no bound
    compute = np.where(s.float32, k.float32_factor, 1.0) * dot + k.mxu_fill_rows / s.rows * dot  # held: 1, 0
    if k.profile_scale:
        compute = np.fmax(compute, k.profile_scale * s.est_cycles / s.steps / s.clock_hz)
    overlapped = k.overlapped_step_cycles + k.accumulator_cycles_per_kib * s.accumulator_kib  # held: 0
    # float32 operands are rounded to bfloat16 for one MXU pass, like the dot overlapped by the copies
    overlapped = np.where(s.float32, overlapped + k.float32_cycles_per_kib * s.operand_kib, overlapped)
    core = (compute + overlapped / s.clock_hz)[:, None]
    copies = s.window_bytes / bw[:, None] + s.window_dmas * k.dma_latency_cycles / s.clock_hz[:, None]
    x = s.single_buffered[:, None]  # copies without a second buffer wait for the step; the others overlap
    steady = _row_sums(s.window_counts * (np.maximum(core, (1 - x) * copies) + x * copies), s._lengths)
    fixed = s.steps * k.step_cycles + s.dmas * k.dma_cycles
    pallas = (s.prologue_bytes + s.epilogue_bytes) / bw + steady + fixed / s.clock_hz
    return np.where(s.xla, xla, pallas)


def device_seconds(f: Features, k: Constants) -> float:
    """Modelled device time of one call of one configuration."""
    return float(device_seconds_of(Stack([f]), k)[0])


def post_seconds(f: Features, k: Constants) -> float:
    """Modelled time as the post measured it: one blocked call, host dispatch included."""
    return device_seconds(f, k) + k.call_seconds


# --- which rows the fit may use ------------------------------------------------------------------

def aspect(df: pd.DataFrame) -> pd.Series:
    """A problem's shape up to scale ("m/k:n/k"): at one aspect FLOP per byte only rises with size."""
    k = df.k.astype(float)
    return (df.m.astype(float) / k).round(6).astype(str) + ":" + (df.n.astype(float) / k).round(6).astype(str)


def best_smaller_rate(df: pd.DataFrame) -> pd.Series:
    """Per XLA estimate: the best TFLOP/s the cost model gives a smaller problem of the same target,
    kernel (precision), dtype and aspect (NaN where there is none, and for other rows)."""
    best = pd.Series(np.nan, index=df.index)
    # XLA's estimates, at DEFAULT precision and its variants alike
    est = df[(df.source == "estimate") & ~is_pallas(df.kernel) & (df.status == "ok") & df.tflops.notna()]
    for _, group in est.groupby([est.target, est.kernel, est.dtype, aspect(est)]):
        shapes = group.drop_duplicates(["m", "k", "n"])
        shapes = shapes.assign(_work=flop_count(shapes.m.astype(float), shapes.k.astype(float),
                                                shapes.n.astype(float))).sort_values("_work")
        keys = zip(shapes.m, shapes.k, shapes.n, strict=True)
        prior = dict(zip(keys, shapes.tflops.cummax().shift(1), strict=True))
        best[group.index] = [prior[s] for s in zip(group.m, group.k, group.n, strict=True)]
    return best


def flag_nonmonotonic(df: pd.DataFrame) -> pd.Series:
    """True for XLA estimates whose TFLOP/s falls below a smaller problem's of the same aspect: a dip."""
    best = best_smaller_rate(df)
    return (df.tflops < (1 - NONMONOTONIC_TOLERANCE) * best).fillna(False).astype(bool)


# xla_estimate_method: what the modelled columns of an XLA estimate rest on
COST_MODEL = "cost_model"  # libtpu's cost model's cycles
MONOTONE_ENVELOPE = "monotone_envelope"  # a flagged dip: the best smaller problem's rate instead


def envelope_cycles(df: pd.DataFrame) -> pd.Series:
    """Cycles at the best smaller problem's rate for XLA estimates flagged as dips (NaN elsewhere)."""
    best, flagged = best_smaller_rate(df), flag_nonmonotonic(df)
    clock = df.target.map(lambda t: chip(t).clock_hz if t in CHIPS else np.nan).astype(float)
    work = flop_count(df.m.astype(float), df.k.astype(float), df.n.astype(float))
    return (work / (best * TERA) * clock).where(flagged)


POST_TOOLCHAIN = "post"  # the config's name for the post's own compiler (jax 0.4.36, libtpu 0.0.5)


def post_vmem_bytes(df: pd.DataFrame) -> pd.Series:
    """Per row: the VMEM the post's compiler requested for it at the default limit (NaN where unknown);
    a table that carries the column keeps its values where it has no post compile of its own."""
    key = ["target", *MATCH]
    known = df.post_vmem_bytes.astype(float) if "post_vmem_bytes" in df else pd.Series(np.nan, index=df.index)
    if "toolchain" not in df or not len(df):
        return known
    post = df[(df.source == "estimate") & (df.toolchain == POST_TOOLCHAIN) & ~df.raised_limit.eq(True)
              & df.vmem_bytes.notna()]
    if post.empty:
        return known
    lookup = post.drop_duplicates(key)[key].assign(_post=post.drop_duplicates(key).vmem_bytes.astype(float))
    found = df[key].merge(lookup, on=key, how="left")._post  # keeps the left order, one match per key
    return pd.Series(found.to_numpy(), index=df.index).fillna(known)


def estimate_for(df: pd.DataFrame, target: str) -> pd.DataFrame:
    """One ok estimate per (experiment, configuration) of a target: the default VMEM limit's, else
    the smallest raised limit that compiled."""
    cycles = df.est_cycles.notna() | is_pallas(df.kernel)  # the model uses XLA's cycles, not a kernel's
    est = df[(df.source == "estimate") & (df.target == target) & (df.status == "ok") & cycles]
    est = est[~est.search.eq(True)].copy()
    est["_raised"] = est.raised_limit.eq(True)
    est = est.sort_values(["_raised", "vmem_limit_bytes"], kind="stable")
    return est.drop_duplicates(MATCH).drop(columns="_raised")


def reference_points(df: pd.DataFrame, *, source: str = "published", target: str = POST_CHIP,
                     run_label=None) -> tuple[pd.DataFrame, dict]:
    """Rows of `source` paired with this run's estimate of the same configuration (plus ref_seconds,
    ref_wall_seconds, ref_tflops, in_fit, model_vmem_bytes), and the count left out by reason. Points
    whose XLA estimate is a flagged dip are scored but never fitted (in_fit False)."""
    ref = df[(df.source == source) & (df.target == target)]
    if run_label is not None:
        ref = ref[ref.run_label == run_label]
    if source == "measured":  # XLA's measured rows repeat in every experiment: one point each
        ref = ref.drop_duplicates(CONFIG)
    est = estimate_for(df, target)
    flagged = flag_nonmonotonic(df)
    est = est.assign(nonmonotonic=flagged.reindex(est.index).fillna(False).to_numpy(),
                     model_cycles=envelope_cycles(df).reindex(est.index).to_numpy())
    on = CONFIG if source == "measured" else MATCH
    cols = ["tflops", "status"] + (["seconds", "wall_seconds"] if source == "measured" else [])
    pairs = ref[on + cols].merge(est, on=on, how="left", suffixes=("_ref", ""), indicator=True)
    reasons = {}

    def leave(mask, reason):
        nonlocal pairs
        if mask.any():
            reasons[reason] = int(mask.sum())
        pairs = pairs[~mask]

    leave(pairs.status_ref != "ok", f"{source} run failed")
    leave(pairs._merge != "both", "no ok estimate of this configuration")
    in_fit = ~pairs.nonmonotonic.eq(True)
    if (~in_fit).any():
        reasons["scored, not fitted: XLA estimate flagged non-monotonic"] = int((~in_fit).sum())
    work = flop_count(pairs.m.astype(float), pairs.k.astype(float), pairs.n.astype(float))
    seconds = pairs.seconds_ref if source == "measured" else seconds_at(work, pairs.tflops_ref)
    # the buffering of the reference's own run: the post's compiler's request for the post's numbers
    post_vmem = pairs.post_vmem_bytes if source == "published" and "post_vmem_bytes" in pairs else np.nan
    pairs = pairs.assign(ref_tflops=pairs.tflops_ref, in_fit=in_fit, ref_seconds=seconds,
                         ref_wall_seconds=pairs.wall_seconds_ref if source == "measured" else np.nan,
                         model_vmem_bytes=post_vmem)
    return pairs.drop(columns="_merge").reset_index(drop=True), reasons


# --- the fit -------------------------------------------------------------------------------------

@dataclasses.dataclass
class Fit:
    constants: Constants
    std_errors: Constants
    n_points: int
    rms_log_error: float
    at_bound: tuple  # names of constants at a bound of their range (their error is then not meaningful)


def _fit(feats: list[Features], seconds: np.ndarray, *, post: bool, fixed_call=None,
         fixed: dict | None = None, extra: dict | None = None) -> Fit:
    """Least squares on ln(time) of device + call_seconds (`post`), else of device time alone with
    call_seconds at `fixed_call`; `fixed`: constants held; `extra`: constants added (EXTRA's form)."""
    fixed = dict(fixed or {})
    if not post:
        fixed["call_seconds"] = fixed_call or 0.0
    extra = extra or {}
    names = [p for p in PARAMS if p not in fixed] + list(extra)
    if len(feats) < len(names) + 2:
        raise TooFewPoints(f"{len(feats)} points cannot fit {len(names)} constants ({', '.join(names)}): "
                           f"need at least {len(names) + 2}")
    index = [PARAMS.index(p) for p in names if p in PARAMS]
    lower = np.concatenate([LOWER[index], [lo for lo, _, _ in extra.values()]])
    upper = np.concatenate([UPPER[index], [hi for _, hi, _ in extra.values()]])
    scale = np.concatenate([SCALE[index], np.ones(len(extra))])
    starts = [np.concatenate([s[index], e]) for s in STARTS
              for e in itertools.product(*(starts for _, _, starts in extra.values()))]
    target = np.log(np.asarray(seconds, dtype=float))

    def full(z):
        fitted = dict(zip(names, z * scale, strict=True))
        return Constants(**{**dict.fromkeys(PARAMS, 0.0), **fixed, **fitted})  # others: held

    stack = Stack(feats)

    def residuals(z):
        k = full(z)
        device = device_seconds_of(stack, k)
        return np.log(device + k.call_seconds if post else device) - target

    from scipy.optimize import least_squares  # here: a process that only predicts needs no scipy

    best = None
    for start in starts:
        start = np.clip(start, lower, upper)
        result = least_squares(residuals, start / scale, x_scale="jac", diff_step=1e-4,
                               bounds=(lower / scale, upper / scale))
        if best is None or result.cost < best.cost:
            best = result
    r, jac = best.fun, best.jac
    dof = max(1, len(r) - len(names))
    cov = np.linalg.pinv(jac.T @ jac) * float(r @ r) / dof
    errors = dict(zip(names, np.sqrt(np.clip(np.diag(cov), 0, None)) * scale, strict=True))
    values = best.x * scale
    at_bound = tuple(p for p, v, lo, hi in zip(names, values, lower, upper, strict=True)
                     if np.isclose(v, lo, rtol=1e-3, atol=1e-9) or np.isclose(v, hi, rtol=1e-3))
    std = Constants(**{**dict.fromkeys(PARAMS, 0.0), **dict.fromkeys(fixed, 0.0),
                       **dict.fromkeys(EXTRA, 0.0), **errors})
    return Fit(full(best.x), std, len(feats), float(np.sqrt(np.mean(r**2))), at_bound)


def fit_published(points: pd.DataFrame, **form) -> Fit:
    """The constants from published points; `form`: _fit's `fixed` and `extra` (the ablation's)."""
    points = points[points.in_fit]
    feats = [features(r) for r in points.itertuples()]
    return _fit(feats, points.ref_seconds.to_numpy(), post=True, **form)


def fit_measured(points: pd.DataFrame) -> Fit:
    """Constants from a TPU run's measurements: call_seconds the median of wall minus device time, the
    others fitted to device time."""
    ok = points[points.in_fit].dropna(subset=["ref_seconds", "ref_wall_seconds"])
    if len(ok) < 3:
        raise TooFewPoints(f"{len(ok)} measured points with both device and wall time: need at least 3")
    overhead = (ok.ref_wall_seconds - ok.ref_seconds).to_numpy()
    call = float(np.median(overhead))
    feats = [features(r) for r in ok.itertuples()]
    fit = _fit(feats, ok.ref_seconds.to_numpy(), post=False, fixed_call=max(call, 0.0))
    # standard error of a median ~ 1.2533 sigma / sqrt(n)
    err = 1.2533 * float(np.std(overhead, ddof=1)) / np.sqrt(len(overhead)) if len(overhead) > 1 else np.nan
    fit.std_errors = dataclasses.replace(fit.std_errors, call_seconds=err)
    return fit


def predict(points: pd.DataFrame, k: Constants) -> pd.DataFrame:
    device = device_seconds_of(Stack([features(r) for r in points.itertuples()]), k)
    return points.assign(model_device_seconds=device, model_post_seconds=device + k.call_seconds)
