"""The advice as a ranked table: intervals beside every modelled number, ties within the interval
said to be ties, the out-of-VMEM verdicts, and XLA's estimate for the same shape."""
import json
import math

import numpy as np
import pandas as pd

from tpu_matmul_repro.advise.search import PRUNED
from tpu_matmul_repro.experiments.core.chips import chip
from tpu_matmul_repro.experiments.core.units import MiB

LEVEL = 0.8  # the interval shown in the text table and used to call ties (the CSV/JSON have both)
MODELLED = ("model_device_ms", "model_device_tflops", "model_post_ms", "model_post_tflops")
INTERVALS = [f"{col}_{side}{level}" for col in MODELLED for level in (80, 95) for side in ("lo", "hi")]
COLUMNS = ["target", "m", "k", "n", "dtype", "kernel", "rank", "bm", "bk", "bn", "status", "tie",
           "vmem_mib", "vmem_limit_mib", "model_device_ms", "model_device_tflops", "model_post_ms",
           "model_post_tflops", *INTERVALS,
           "model_basis", "xla_estimate_method", "xla_raw_tflops", "est_cycles", "cycles_method",
           "vmem_method", "lower_bound_seconds", "interval", "model_source", "libtpu_version", "note"]


def ranked(rows: pd.DataFrame, xla: pd.DataFrame, model, target: str) -> pd.DataFrame:
    """Candidates fastest first (modelled device time), then the ones without a time; XLA last."""
    q = model.band.halfwidth
    table = pd.concat([rows.assign(_xla=False), xla.assign(_xla=True)], ignore_index=True)
    peak = chip(target).peak_flops[str(table.dtype.dropna().iloc[0])] / 1e12 if len(table) else np.inf
    for time in ("device", "post"):
        table[f"model_{time}_ms"] = table[f"model_{time}_seconds"] * 1e3
        fastest = table[f"model_{time}_ms"] * table[f"model_{time}_tflops"] / peak  # ms at the peak
        for level, half in q.items():
            s = f"{round(100 * level)}"
            # the band stops at the chip's peak, which no kernel passes
            with np.errstate(invalid="ignore"):  # rows without a time: NaN on both sides
                slow = table[f"model_{time}_ms"] * math.exp(-half)
                table[f"model_{time}_ms_lo{s}"] = np.fmax(slow, fastest)
            table[f"model_{time}_ms_hi{s}"] = table[f"model_{time}_ms"] * math.exp(half)
            table[f"model_{time}_tflops_lo{s}"] = table[f"model_{time}_tflops"] * math.exp(-half)
            fast = table[f"model_{time}_tflops"] * math.exp(half)
            with np.errstate(invalid="ignore"):
                table[f"model_{time}_tflops_hi{s}"] = np.fmin(fast, peak)
    table["vmem_mib"] = table.vmem_bytes.astype(float) / MiB
    table["vmem_limit_mib"] = table.vmem_limit_bytes.astype(float) / MiB
    table["xla_raw_tflops"] = np.where(table._xla, table.tflops, np.nan)
    pallas = table[~table._xla]
    timed = pallas.model_device_seconds.notna()
    order = pallas[timed].sort_values(["model_device_seconds", "bm", "bk", "bn"]).index
    table["rank"] = pd.Series(range(1, len(order) + 1), index=order).reindex(table.index).astype("Int64")
    best = pallas.model_device_seconds.min()
    table["tie"] = ""
    if len(order):
        close = table.model_device_seconds <= best * math.exp(q[LEVEL])
        within = (~table._xla) & close & (table["rank"] > 1)
        table.loc[within, "tie"] = f"tie with #1 (within the {round(100 * LEVEL)} % interval)"
    table["note"] = [note(r) for r in table.itertuples()]
    table["interval"] = model.band.describe(target, "published v5e")
    table["model_source"] = model.source
    untimed = pallas[~timed].sort_values(["status", "bm", "bk", "bn"]).index
    out = table.loc[list(order) + list(untimed) + list(table.index[table._xla])]
    return out.reindex(columns=COLUMNS).reset_index(drop=True)


def note(r) -> str:
    if r.status == "vmem_oom" and r.vmem_method == "block_bound":
        return f"out of VMEM, not compiled: its blocks alone need {r.vmem_bytes / MiB:.1f} MiB, more than " \
               f"the {r.oom_limit_bytes / MiB:.0f} MiB limit"
    if r.status == "vmem_oom":
        asks = f"asks {r.vmem_bytes / MiB:.1f} MiB, " if not pd.isna(r.vmem_bytes) else ""
        limit = r.oom_limit_bytes / MiB if not pd.isna(r.oom_limit_bytes) else float("nan")
        return f"out of VMEM: {asks}more than the {limit:.0f} MiB limit ({r.vmem_method})"
    if r.status != "ok":
        return str(r.error)
    if r.kernel == "xla" and r.xla_estimate_method == "monotone_envelope":
        return "libtpu's cost model dips here: the best smaller same-aspect problem's rate is used"
    if isinstance(r.model_basis, str) and r.model_basis.startswith("model only"):
        return "no compiler cycles: modelled from the chip's peak and bandwidth alone"
    return ""


def text(table: pd.DataFrame, header: list[str]) -> str:
    """The ranked table for a terminal."""
    s = f"{round(100 * LEVEL)}"
    lines = [*header, ""]
    cols = f"{'rank':>4}  {'blocks (bm,bk,bn)':<18} {'VMEM MiB':>15}  {'device ms [' + s + ' %]':<26} " \
           f"{'TFLOP/s [' + s + ' %]':<22} {'post ms':>8}  note"
    lines.append(cols)
    pruned = table[table.status == PRUNED]
    for r in table[table.status != PRUNED].itertuples():
        if r.kernel == "xla":
            blocks, rank = "XLA jnp.matmul", "XLA"
        else:
            blocks, rank = f"({r.bm},{r.bk},{r.bn})", "-" if pd.isna(r.rank) else str(r.rank)
        vmem = "" if pd.isna(r.vmem_mib) or r.status != "ok" else f"{r.vmem_mib:.1f} / {r.vmem_limit_mib:.0f}"
        if pd.isna(r.model_device_ms):
            times = f"{'':<26} {'':<22} {'':>8}"
        else:
            device = f"{r.model_device_ms:.3f} [{getattr(r, f'model_device_ms_lo{s}'):.3f}-" \
                     f"{getattr(r, f'model_device_ms_hi{s}'):.3f}]"
            tflops = f"{r.model_device_tflops:.0f} [{getattr(r, f'model_device_tflops_lo{s}'):.0f}-" \
                     f"{getattr(r, f'model_device_tflops_hi{s}'):.0f}]"
            times = f"{device:<26} {tflops:<22} {r.model_post_ms:>8.3f}"
        extra = "; ".join(x for x in (r.tie, r.note) if x)
        if r.kernel == "xla" and not pd.isna(r.xla_raw_tflops):
            raw = f"libtpu's raw estimate {r.xla_raw_tflops:.0f} TFLOP/s"
            extra = "; ".join(x for x in (raw, r.note) if x)
        lines.append(f"{rank:>4}  {blocks:<18} {vmem:>15}  {times}  {extra}".rstrip())
    if len(pruned):
        lines.append(f"{len(pruned)} more candidates not compiled: even without compiler cycles the model "
                     f"gives each at least {pruned.lower_bound_seconds.min() * 1e3:.3f} ms, beyond the 80 % "
                     "interval of the best: none can win or tie (--csv lists them)")
    return "\n".join(lines)


def as_json(table: pd.DataFrame) -> str:
    records = json.loads(table.to_json(orient="records"))
    return json.dumps(records, indent=1)
