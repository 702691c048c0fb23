"""The advice as a ranked table: every modelled number's interval, ties said to be ties, each
candidate's VMEM, XLA's estimate, what bounds each row, and a recommendation generated from them."""
import json
import math

import numpy as np
import pandas as pd

from tpu_matmul_repro.advise.search import DOUBLE_BUFFER_BOUND, PRUNED, SearchResult, fastest_of
from tpu_matmul_repro.experiments.compile_study.study import DOMINATED
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.chips import chip
from tpu_matmul_repro.experiments.core.traffic import OUT_DTYPE
from tpu_matmul_repro.experiments.core.traffic_cache import cached_hbm_bytes
from tpu_matmul_repro.experiments.core.units import MiB, flops
from tpu_matmul_repro.kernels import DECLARED, is_pallas
from tpu_matmul_repro.report.advice import LEVEL, blocks_label, budget_spent, padded, recommendation

MODELLED = ("model_device_ms", "model_device_tflops", "model_post_ms", "model_post_tflops")
INTERVALS = [f"{col}_{side}{level}" for col in MODELLED for level in (80, 95) for side in ("lo", "hi")]
COLUMNS = ["target", "m", "k", "n", "dtype", "kernel", "rank", "bm", "bk", "bn", "padded_shape", "status",
           "tie", "same_time_as", "vmem_mib", "vmem_limit_mib", "vmem_needed_mib", "physical_vmem_mib",
           "limits_tried", "model_device_ms", "model_device_tflops", "model_post_ms", "model_post_tflops",
           *INTERVALS, "bound", "peak_flops_pct", "hbm_bandwidth_pct",
           "xla_estimate_method", "xla_raw_tflops", "est_cycles", "cycles_method",
           "vmem_method", "lower_bound_seconds", "interval", "model_source", "libtpu_version",
           "recommendation", "note"]
SAME = 1e-9  # modelled times closer than this (relative) are one time: a twin's sum in another order
TIE_BREAK = ("equal modelled times rank the blocks that need less VMEM first, then those with fewer grid "
             "steps, then the smaller (bm, bk, bn)")
# A row is compute- or bandwidth-bound where the chip's peak or its HBM bandwidth alone accounts for at
# least this share of its modelled time (the larger one names it); overhead-bound where neither does.
BOUND_SHARE = 0.5


def ranked(found: SearchResult, model, target: str) -> pd.DataFrame:
    """Candidates fastest first (modelled device time; TIE_BREAK among equal times), then the ones
    without a time; XLA last."""
    rows = found.rows[is_pallas(found.rows.kernel)] if len(found.rows) else found.rows
    table = pd.concat([rows.assign(_xla=False), found.xla.assign(_xla=True)], ignore_index=True)
    for time in ("device", "post"):
        table[f"model_{time}_ms"] = table[f"model_{time}_seconds"].astype(float) * 1e3
        for s in ("80", "95"):
            for side in ("lo", "hi"):
                seconds = table[f"model_{time}_seconds_{side}{s}"].astype(float)
                table[f"model_{time}_ms_{side}{s}"] = seconds * 1e3
    c = chip(target)
    table["vmem_mib"] = table.vmem_bytes.astype(float) / MiB
    table["vmem_limit_mib"] = found.limit / MiB
    table["vmem_needed_mib"] = np.where(table.status.isin(["ok", "vmem_oom"]), table.vmem_mib, np.nan)
    table["physical_vmem_mib"] = c.vmem_bytes / MiB
    table["xla_raw_tflops"] = np.where(table._xla, table.tflops, np.nan)
    pallas = table[~table._xla]
    timed = pallas.model_device_seconds.notna() & (pallas.status == "ok")
    keys = pallas[timed].assign(_time=[float(f"{t:.9g}") for t in pallas.model_device_seconds[timed]],
                                _vmem=pallas.vmem_bytes[timed].astype(float).fillna(math.inf),
                                _steps=[grid_steps(r) for r in pallas[timed].itertuples()])
    order = keys.sort_values(["_time", "_vmem", "_steps", "bm", "bk", "bn"]).index
    table["rank"] = pd.Series(range(1, len(order) + 1), index=order).reindex(table.index).astype("Int64")
    table["same_time_as"] = ""
    names, times = labels(table.loc[order]), table.model_device_seconds.loc[order].to_numpy()
    first = ""
    for i, index in enumerate(order):
        if i and abs(times[i - 1] - times[i]) <= SAME * max(abs(times[i - 1]), abs(times[i])):
            table.at[index, "same_time_as"] = first
        else:
            first = names[index]
    table["tie"] = ""
    lead = fastest_of(pallas, table[table._xla])
    if lead is not None and len(order):
        within = (~table._xla) & (table.model_device_seconds <= lead.tie_seconds)
        if not lead.xla:
            within &= table["rank"] > 1
        fastest = "XLA" if lead.xla else "#1"
        table.loc[within.fillna(False), "tie"] = f"tie with {fastest} (within its {LEVEL} % interval)"
    bounds = pd.DataFrame([bound_of(r, model) for r in table.itertuples()], index=table.index)
    table[["bound", "peak_flops_pct", "hbm_bandwidth_pct"]] = bounds
    table["note"] = [note(r, found.limit) for r in table.itertuples()]
    table["interval"] = table.model_interval
    table["model_source"] = model.source
    untimed = pallas.index.difference(order)
    untimed = pallas.loc[untimed].sort_values(["status", "bm", "bk", "bn"]).index
    out = table.loc[list(order) + list(untimed) + list(table.index[table._xla])]
    out = out.reindex(columns=COLUMNS).reset_index(drop=True)
    out["recommendation"] = recommendation(out, found.limit)
    return out


def kernel_shape(r) -> tuple[int, int, int]:
    """The problem the row's kernel runs: the shape asked, or the one zero-padded to whole blocks."""
    if padded(r):
        return tuple(int(x) for x in r.padded_shape.split("x"))
    return int(r.m), int(r.k), int(r.n)


def grid_steps(r) -> int:
    m, k, n = kernel_shape(r)
    return math.ceil(m / r.bm) * math.ceil(k / r.bk) * math.ceil(n / r.bn)


def bound_of(r, model) -> dict:
    """What bounds a modelled row (BOUND_SHARE), and its share in % of the chip's peak FLOP/s (the
    shape's own FLOPs) and of its HBM bandwidth (the bytes the kernel moves, padding included)."""
    seconds = r.model_device_seconds
    if pd.isna(seconds) or not seconds > 0:
        return dict(bound="", peak_flops_pct=np.nan, hbm_bandwidth_pct=np.nan)
    c = chip(r.target)
    peak, bandwidth = c.peak_flops[r.dtype], c.hbm_bytes_per_s
    own = Case("xla", r.dtype, int(r.m), int(r.k), int(r.n))
    if r.kernel == "xla" or pd.isna(r.bm):
        case, factor = own, 1.0
    else:
        case = Case(r.kernel, r.dtype, *kernel_shape(r), int(r.bm), int(r.bk), int(r.bn))
        factor = model.constants.float32_factor if r.dtype == "float32" else 1.0
    compute = factor * flops(case.m, case.k, case.n) / peak / seconds
    moved = cached_hbm_bytes(case) / bandwidth / seconds
    if max(compute, moved) < BOUND_SHARE:
        bound = "overhead"
    else:
        bound = "compute" if compute >= moved else "bandwidth"
    return dict(bound=bound, peak_flops_pct=100 * flops(own.m, own.k, own.n) / peak / seconds,
                hbm_bandwidth_pct=100 * moved)


def share(r) -> str:
    """A row's share of what bounds it, '83 % of peak FLOP/s' (overhead: the larger share)."""
    flops_share = f"{r.peak_flops_pct:.0f} % of peak FLOP/s"
    hbm_share = f"{r.hbm_bandwidth_pct:.0f} % of HBM bandwidth"
    if r.bound == "compute":
        return flops_share
    if r.bound == "bandwidth":
        return hbm_share
    return flops_share if r.peak_flops_pct >= r.hbm_bandwidth_pct else hbm_share


def band(r, level: int = LEVEL) -> str:
    """The row's band as a factor: 'x/1.15' (its lower end never below the chip's peak: the CSV's)."""
    return f"x/{getattr(r, f'model_device_ms_hi{level}') / r.model_device_ms:.2f}"


def note(r, limit: int) -> str:
    pad = f"zero-padded to {r.padded_shape}" if padded(r) else ""
    if r.status == "vmem_oom" and r.vmem_method == "block_bound":
        why = f"out of VMEM, not compiled: its blocks alone need {r.vmem_bytes / MiB:.1f} MiB, more than " \
              f"the {limit / MiB:.0f} MiB limit"
    elif r.status == "vmem_oom" and r.vmem_method == DOUBLE_BUFFER_BOUND:
        why = f"out of VMEM, not compiled: two buffers of its blocks need {r.vmem_bytes / MiB:.1f} MiB, " \
              f"more than the {limit / MiB:.0f} MiB limit"
    elif r.status == "vmem_oom":
        asks = f"asks {r.vmem_bytes / MiB:.1f} MiB, " if not pd.isna(r.vmem_bytes) else ""
        why = f"out of VMEM: {asks}more than the {limit / MiB:.0f} MiB limit ({r.vmem_method})"
    elif r.status == PRUNED:
        why = ""
    elif r.status != "ok":
        why = str(r.error)
    elif r.kernel == "xla" and r.xla_estimate_method == "monotone_envelope":
        why = "libtpu's cost model dips here: the best smaller same-aspect problem's rate is used"
    else:
        why = ""
    tried = r.limits_tried if isinstance(r.limits_tried, str) and ";" in r.limits_tried else ""
    return "; ".join(x for x in (pad, why, tried) if x)


def headline(table: pd.DataFrame) -> list[str]:
    """The answer a user can paste: the fastest modelled configuration with the lines that use it, the
    set the model cannot tell from it, the reason and the tie-break rule."""
    if table.empty:
        return ["No recommendation: no candidate and no XLA estimate."]
    first = next(table.head(1).itertuples())  # rows as tuples: a Series' .dtype is its own
    problem = f"{first.m}x{first.k}x{first.n} {first.dtype} on {first.target}"
    pallas = table[table["rank"].notna()].sort_values("rank")
    xla = table[(table.kernel == "xla") & table.model_device_ms.notna()]
    why = f"Why: {table.recommendation.iloc[0]}."
    spent = int(budget_spent(table).sum())
    cut = (f" ({spent} configurations not compiled: the time budget ran out; the answer is among those "
           "compiled)") if spent else ""
    if pallas.empty and xla.empty:
        return [f"No recommendation for {problem}: nothing has a modelled time{cut}.", why]
    use_xla = bool(len(xla)) and (pallas.empty
                                  or xla.model_device_ms.iloc[0] < pallas.model_device_ms.iloc[0])
    best = next((xla if use_xla else pallas).head(1).itertuples())
    time = (f"{best.model_device_ms:.3f} ms {band(best)} ({LEVEL} %) device time, {best.bound}-bound, "
            f"{share(best)}")
    if use_xla:
        lines = [f"Use XLA for {problem}: {time}{cut}", *xla_lines(best)]
    else:
        twins = pallas[pallas.same_time_as == blocks_label(best)]
        also = f" (or {', '.join(blocks_label(r) for r in twins.itertuples())}: the same modelled time)" \
            if len(twins) else ""
        lines = [f"Use blocks (bm, bk, bn) = {blocks_label(best)}{also} for {problem}: {time}{cut}",
                 *block_lines(best)]
    return [*lines, tie_set(table, best, use_xla), why, f"Tie-break: {TIE_BREAK}."]


def tie_set(table: pd.DataFrame, best, use_xla: bool) -> str:
    """The configurations the model cannot tell from the recommended one, twins collapsed."""
    tied = table[(table.tie != "") & (table.same_time_as == "") & table["rank"].notna()]
    twins = twin_labels(table)
    names = [blocks_label(r) + "".join(f" = {twin}" for twin in twins.get(blocks_label(r), []))
             for r in tied.itertuples()]
    if not use_xla:
        xla = table[(table.kernel == "xla") & table.model_device_ms.notna()]
        if len(xla) and xla.model_device_ms.iloc[0] <= best.model_device_ms_hi80:
            names.append("XLA")
    if not names:
        return f"Tie set: none; nothing else is within its {LEVEL} % band ({band(best)})."
    return (f"Tie set (within its {LEVEL} % band, {band(best)}, the model cannot rank them): "
            + ", ".join(names))


def labels(rows: pd.DataFrame) -> pd.Series:
    """blocks_label of every row, at once."""
    whole = rows[["bm", "bk", "bn"]].astype("Int64").astype(str)
    return "(" + whole.bm + "," + whole.bk + "," + whole.bn + ")"


def twin_labels(table: pd.DataFrame) -> dict:
    """{a ranked row's blocks: the blocks of the rows of the same modelled time (same_time_as)}."""
    twins = table[table.same_time_as.fillna("") != ""]
    return {first: list(labels(rows)) for first, rows in twins.groupby("same_time_as")}


def block_lines(r) -> list[str]:
    """The arguments of pl.pallas_call that run the row's kernel with its blocks, as kernels/ writes
    them, with its scoped-VMEM limit."""
    m, k, n = kernel_shape(r)
    bm, bk, bn = int(r.bm), int(r.bk), int(r.bn)
    facts = DECLARED[r.kernel]
    source = {"v3": "kernels/v3_block.py matmul_v3_block_kernel",
              "v5": "kernels/v5_accumulator.py matmul_v5_kernel"}.get(r.kernel, f"kernel {r.kernel}")
    lines = [f"    # pl.pallas_call(<the kernel body of {source}>, out_shape=..., and:"]
    if padded(r):
        lines.append(f"    # A zero-padded to ({m}, {k}), B to ({k}, {n}); C[:{r.m}, :{r.n}] is the product")
    lines += [f"    grid=({m // bm}, {n // bn}, {k // bk}),",
              f"    in_specs=[pl.BlockSpec(({bm}, {bk}), lambda i, j, kk: (i, kk)),",
              f"              pl.BlockSpec(({bk}, {bn}), lambda i, j, kk: (kk, j))],",
              f"    out_specs=pl.BlockSpec(({bm}, {bn}), lambda i, j, kk: (i, j)),"]
    if facts.accumulator:
        acc = "jnp.int32" if r.dtype == "int8" else "jnp.float32"
        lines.append(f"    scratch_shapes=[pltpu.VMEM(({bm}, {bn}), {acc})],")
    limit = round(r.vmem_limit_mib)
    lines += ['    compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", '
              '"arbitrary"),',
              f"                                         vmem_limit_bytes={limit} * 1024 * 1024),"]
    return lines


def xla_lines(r) -> list[str]:
    out = f", preferred_element_type=jnp.{OUT_DTYPE[r.dtype]}" if OUT_DTYPE[r.dtype] != r.dtype else ""
    return [f"    c = jnp.matmul(a, b{out})  # XLA's own matmul: no Pallas kernel"]


def text(table: pd.DataFrame, header: list[str], checked: str = "") -> str:
    """The ranked table for a terminal, the recommendation on top; `checked`: a line under it."""
    s = f"{LEVEL}"
    lines = headline(table) + ([checked] if checked else []) + [""] + header
    lines.append(f"Band: x/f is the {s} % prediction interval, from t/f to t x f (never faster than the "
                 "chip's peak; --csv has both ends). Bound: what accounts for at least half the modelled "
                 "time, the chip's peak FLOP/s or its HBM bandwidth; overhead where neither does.")
    lines.append("")
    cols = f"{'rank':>4}  {'blocks (bm,bk,bn)':<18} {'VMEM MiB need/limit/chip':>24}  " \
           f"{'device ms':<16} {'TFLOP/s':>7}  {'bound':<9} {'share of it':<24} {'post ms':>8}  note"
    lines.append(cols)
    pruned = table[table.status == PRUNED]
    unbuilt = table.vmem_method.isin(["block_bound", DOUBLE_BUFFER_BOUND, DOMINATED]) \
        & (table.status == "vmem_oom")
    spent = budget_spent(table) & (table.kernel != "xla")
    twins = twin_labels(table)
    for r in table[(table.status != PRUNED) & ~unbuilt & ~spent & (table.same_time_as.fillna("") == "")
                   ].itertuples():
        if r.kernel == "xla":
            blocks, rank = "XLA jnp.matmul", "XLA"
        else:
            blocks, rank = blocks_label(r), "-" if pd.isna(r.rank) else str(r.rank)
        vmem = "" if pd.isna(r.vmem_needed_mib) or r.kernel == "xla" else \
            f"{r.vmem_needed_mib:.1f} / {r.vmem_limit_mib:.0f} / {r.physical_vmem_mib:.0f}"
        if pd.isna(r.model_device_ms):
            times = f"{'':<16} {'':>7}  {'':<9} {'':<24} {'':>8}"
        else:
            device = f"{r.model_device_ms:.3f} {band(r)}"
            times = f"{device:<16} {r.model_device_tflops:>7.0f}  {r.bound:<9} {share(r):<24} " \
                    f"{r.model_post_ms:>8.3f}"
        same = ", ".join(twins.get(blocks_label(r), [])) if r.kernel != "xla" else ""
        same = f"same modelled time as {same}" if same else ""
        extra = "; ".join(x for x in (r.tie, same, r.note) if isinstance(x, str) and x)
        if r.kernel == "xla" and not pd.isna(r.xla_raw_tflops):
            raw = f"libtpu's raw estimate {r.xla_raw_tflops:.0f} TFLOP/s"
            extra = "; ".join(x for x in (raw, r.note) if x)
        lines.append(f"{rank:>4}  {blocks:<18} {vmem:>24}  {times}  {extra}".rstrip())
    bound = table[unbuilt & (table.vmem_method == "block_bound")]
    if len(bound):
        its = "its" if len(bound) == 1 else "their"
        lines.append(f"{more_candidates(len(bound))} out of VMEM, not compiled: {its} blocks alone need "
                     f"{bound.vmem_mib.min():.1f} MiB or more, beyond the "
                     f"{bound.vmem_limit_mib.iloc[0]:.0f} MiB limit (--csv lists {it_or_them(len(bound))})")
    double = table[unbuilt & (table.vmem_method == DOUBLE_BUFFER_BOUND)]
    if len(double):
        its = "its" if len(double) == 1 else "their"
        lines.append(f"{more_candidates(len(double))} out of VMEM, not compiled: more than one step along "
                     f"every grid axis, so libtpu double-buffers {its} blocks, which then need "
                     f"{double.vmem_mib.min():.1f} MiB or more, beyond the "
                     f"{double.vmem_limit_mib.iloc[0]:.0f} MiB limit (--csv lists {it_or_them(len(double))})")
    dominated = table[unbuilt & (table.vmem_method == DOMINATED)]
    if len(dominated):
        lines.append(f"{more_candidates(len(dominated))} out of VMEM, not compiled: at least as large along "
                     "every axis as blocks that ran out, with single steps along the same axes (--csv lists "
                     f"{it_or_them(len(dominated))})")
    if len(pruned):
        each, none = (("it", "it can neither be the best block nor tie") if len(pruned) == 1
                      else ("each", "none can be the best block or tie"))
        lines.append(f"{more_candidates(len(pruned))} not compiled: even without compiler cycles the model "
                     f"gives {each} at least {pruned.lower_bound_seconds.min() * 1e3:.3f} ms, beyond the "
                     f"{LEVEL} % interval of the fastest and the best block's time: {none} "
                     f"(--csv lists {it_or_them(len(pruned))})")
    if spent.any():
        n = int(spent.sum())
        lines.append(f"{more_candidates(n)} not compiled: the time budget ran out (--time-budget; what was "
                     "compiled is in the compile cache, a rerun goes on from there; --csv lists "
                     f"{it_or_them(n)})")
    return "\n".join(lines)


def more_candidates(count: int) -> str:
    return f"{count} more candidate" + ("" if count == 1 else "s")


def it_or_them(count: int) -> str:
    return "it" if count == 1 else "them"


def as_json(table: pd.DataFrame) -> str:
    records = json.loads(table.to_json(orient="records", double_precision=15))
    return json.dumps(records, indent=1)
