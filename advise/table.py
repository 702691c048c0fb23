"""The advice as a ranked table: the intervals the pipeline gives every modelled number, ties within the
interval said to be ties, what each candidate needs of VMEM, XLA's estimate for the same shape, and a
recommendation generated from those numbers."""
import json

import numpy as np
import pandas as pd

from tpu_matmul_repro.advise.search import DOUBLE_BUFFER_BOUND, PRUNED, Found, leader_of
from tpu_matmul_repro.analysis.summaries import MODEL_ONLY
from tpu_matmul_repro.experiments.compile_study.study import DOMINATED
from tpu_matmul_repro.experiments.core.chips import chip
from tpu_matmul_repro.experiments.core.units import MiB
from tpu_matmul_repro.report.advice import LEVEL, blocks_label, padded, recommendation

MODELLED = ("model_device_ms", "model_device_tflops", "model_post_ms", "model_post_tflops")
INTERVALS = [f"{col}_{side}{level}" for col in MODELLED for level in (80, 95) for side in ("lo", "hi")]
COLUMNS = ["target", "m", "k", "n", "dtype", "kernel", "rank", "bm", "bk", "bn", "padded_shape", "status",
           "tie", "vmem_mib", "vmem_limit_mib", "vmem_needed_mib", "physical_vmem_mib", "limits_tried",
           "model_device_ms", "model_device_tflops", "model_post_ms", "model_post_tflops", *INTERVALS,
           "model_basis", "xla_estimate_method", "xla_raw_tflops", "est_cycles", "cycles_method",
           "vmem_method", "lower_bound_seconds", "interval", "model_source", "libtpu_version",
           "recommendation", "note"]


def ranked(found: Found, model, target: str) -> pd.DataFrame:
    """Candidates fastest first (modelled device time), then the ones without a time; XLA last."""
    table = pd.concat([found.rows.assign(_xla=False), found.xla.assign(_xla=True)], ignore_index=True)
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
    table["model_basis"] = np.where(table.model_fit.fillna("").str.endswith(MODEL_ONLY), MODEL_ONLY,
                                    np.where(table.model_device_seconds.notna(), "compiler cycles", ""))
    pallas = table[~table._xla]
    timed = pallas.model_device_seconds.notna() & (pallas.status == "ok")
    order = pallas[timed].sort_values(["model_device_seconds", "bm", "bk", "bn"]).index
    table["rank"] = pd.Series(range(1, len(order) + 1), index=order).reindex(table.index).astype("Int64")
    table["tie"] = ""
    lead = leader_of(pallas, table[table._xla])
    if lead is not None and len(order):
        within = (~table._xla) & (table.model_device_seconds <= lead.tie_seconds)
        if not lead.xla:
            within &= table["rank"] > 1
        fastest = "XLA" if lead.xla else "#1"
        table.loc[within.fillna(False), "tie"] = f"tie with {fastest} (within its {LEVEL} % interval)"
    table["note"] = [note(r, found.limit) for r in table.itertuples()]
    table["interval"] = table.model_interval
    table["model_source"] = model.source
    untimed = pallas.index.difference(order)
    untimed = pallas.loc[untimed].sort_values(["status", "bm", "bk", "bn"]).index
    out = table.loc[list(order) + list(untimed) + list(table.index[table._xla])]
    out = out.reindex(columns=COLUMNS).reset_index(drop=True)
    out["recommendation"] = recommendation(out, found.limit)
    return out


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
    elif r.model_basis == MODEL_ONLY:
        why = "no compiler cycles: modelled from the chip's peak and bandwidth alone"
    else:
        why = ""
    tried = r.limits_tried if isinstance(r.limits_tried, str) and ";" in r.limits_tried else ""
    return "; ".join(x for x in (pad, why, tried) if x)


def text(table: pd.DataFrame, header: list[str]) -> str:
    """The ranked table for a terminal, its recommendation on top."""
    s = f"{LEVEL}"
    lines = header[:1]
    if len(table):
        lines.append(f"Recommendation: {table.recommendation.iloc[0]}.")
    lines += [*header[1:], ""]
    cols = f"{'rank':>4}  {'blocks (bm,bk,bn)':<18} {'VMEM MiB need/limit/chip':>24}  " \
           f"{'device ms [' + s + ' %]':<26} {'TFLOP/s [' + s + ' %]':<22} {'post ms':>8}  note"
    lines.append(cols)
    pruned = table[table.status == PRUNED]
    unbuilt = table.vmem_method.isin(["block_bound", DOUBLE_BUFFER_BOUND, DOMINATED]) \
        & (table.status == "vmem_oom")
    for r in table[(table.status != PRUNED) & ~unbuilt].itertuples():
        if r.kernel == "xla":
            blocks, rank = "XLA jnp.matmul", "XLA"
        else:
            blocks, rank = blocks_label(r), "-" if pd.isna(r.rank) else str(r.rank)
        vmem = "" if pd.isna(r.vmem_needed_mib) or r.kernel == "xla" else \
            f"{r.vmem_needed_mib:.1f} / {r.vmem_limit_mib:.0f} / {r.physical_vmem_mib:.0f}"
        if pd.isna(r.model_device_ms):
            times = f"{'':<26} {'':<22} {'':>8}"
        else:
            device = f"{r.model_device_ms:.3f} [{getattr(r, f'model_device_ms_lo{s}'):.3f}-" \
                     f"{getattr(r, f'model_device_ms_hi{s}'):.3f}]"
            tflops = f"{r.model_device_tflops:.0f} [{getattr(r, f'model_device_tflops_lo{s}'):.0f}-" \
                     f"{getattr(r, f'model_device_tflops_hi{s}'):.0f}]"
            times = f"{device:<26} {tflops:<22} {r.model_post_ms:>8.3f}"
        extra = "; ".join(x for x in (r.tie, r.note) if isinstance(x, str) and x)
        if r.kernel == "xla" and not pd.isna(r.xla_raw_tflops):
            raw = f"libtpu's raw estimate {r.xla_raw_tflops:.0f} TFLOP/s"
            extra = "; ".join(x for x in (raw, r.note) if x)
        lines.append(f"{rank:>4}  {blocks:<18} {vmem:>24}  {times}  {extra}".rstrip())
    bound = table[unbuilt & (table.vmem_method == "block_bound")]
    if len(bound):
        its = "its" if len(bound) == 1 else "their"
        lines.append(f"{more(len(bound))} out of VMEM, not compiled: {its} blocks alone need "
                     f"{bound.vmem_mib.min():.1f} MiB or more, beyond the "
                     f"{bound.vmem_limit_mib.iloc[0]:.0f} MiB limit (--csv lists {them(len(bound))})")
    double = table[unbuilt & (table.vmem_method == DOUBLE_BUFFER_BOUND)]
    if len(double):
        its = "its" if len(double) == 1 else "their"
        lines.append(f"{more(len(double))} out of VMEM, not compiled: more than one step along "
                     f"every grid axis, so libtpu double-buffers {its} blocks, which then need "
                     f"{double.vmem_mib.min():.1f} MiB or more, beyond the "
                     f"{double.vmem_limit_mib.iloc[0]:.0f} MiB limit (--csv lists {them(len(double))})")
    dominated = table[unbuilt & (table.vmem_method == DOMINATED)]
    if len(dominated):
        lines.append(f"{more(len(dominated))} out of VMEM, not compiled: at least as large along "
                     "every axis as blocks that ran out, with single steps along the same axes (--csv lists "
                     f"{them(len(dominated))})")
    if len(pruned):
        each, none = (("it", "it can neither be the best block nor tie") if len(pruned) == 1
                      else ("each", "none can be the best block or tie"))
        lines.append(f"{more(len(pruned))} not compiled: even without compiler cycles the model "
                     f"gives {each} at least {pruned.lower_bound_seconds.min() * 1e3:.3f} ms, beyond the "
                     f"{LEVEL} % interval of the fastest and the best block's time: {none} "
                     f"(--csv lists {them(len(pruned))})")
    return "\n".join(lines)


def more(count: int) -> str:
    return f"{count} more candidate" + ("" if count == 1 else "s")


def them(count: int) -> str:
    return "it" if count == 1 else "them"


def as_json(table: pd.DataFrame) -> str:
    records = json.loads(table.to_json(orient="records", double_precision=15))
    return json.dumps(records, indent=1)
