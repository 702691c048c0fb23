"""Small tables for the report, built from the tidy table (cells are strings, ready to print)."""
import pandas as pd

from experiments.analysis.summaries import default_limit, post_configs
from experiments.core.units import MiB, flops


def config_label(row) -> str:
    if row.kernel == "xla":
        return "XLA jnp.matmul"
    if pd.isna(row.bm):
        return f"Pallas {row.kernel}"
    if row.kernel == "v2":
        return f"Pallas v2, N = {int(row.m // row.bm)}"
    return f"({int(row.bm)}, {int(row.bk)}, {int(row.bn)})"


def cell(est, pub, gettext) -> dict:
    """The estimate for one configuration and size, and the post's number if it published one (shown
    under it, so no cell stacks parentheses)."""
    if est is None:
        text = "–"
    elif est.status == "ok" and pd.notna(est.tflops):
        text = f"{est.tflops:.1f}"
    elif est.status == "vmem_oom":
        text = gettext("out of VMEM: %(mib).1f MiB") % {"mib": est.vmem_bytes / MiB}
    else:
        text = est.status
    published = None
    if pub is not None:
        published = f"{pub.tflops:.1f}" if pub.status == "ok" and pd.notna(pub.tflops) else gettext("failed")
    return {"est": text, "pub": published}


def experiment_table(df: pd.DataFrame, experiment: str, dtype: str, target: str, gettext) -> dict:
    """Rows: the post's configurations; columns: sizes; cells: estimated (published) TFLOP/s."""
    rows = default_limit(df[(df.experiment == experiment) & (df.dtype == dtype) & (df.target == target)])
    rows = post_configs(rows)
    est = rows[rows.source == "estimate"]
    pub = rows[rows.source == "published"]
    sizes = sorted(set(rows.m))
    labels = {}
    for r in rows.itertuples():
        labels.setdefault(config_label(r), (r.kernel != "xla", r.kernel, *(0 if pd.isna(v) else v for v in (r.bm, r.bk, r.bn))))
    body = []
    for label in sorted(labels, key=labels.get):
        def find(part, size):
            hit = [r for r in part.itertuples() if r.m == size and config_label(r) == label]
            return hit[0] if hit else None
        body.append({"label": label, "cells": [cell(find(est, s), find(pub, s), gettext) for s in sizes]})
    return {"sizes": sizes, "rows": body, "published": not pub.empty}


def provenance(df: pd.DataFrame) -> list[dict]:
    """One line per (source, target): how many rows, from which device or compiler versions."""
    out = []
    for (source, target), group in df.groupby(["source", "target"], sort=False):
        first = group.iloc[0]
        out.append(dict(source=source, target=target, rows=len(group),
                        device_kind=first.device_kind if pd.notna(first.device_kind) else "",
                        jax=first.jax_version if pd.notna(first.jax_version) else "",
                        libtpu=first.libtpu_version if pd.notna(first.libtpu_version) else "",
                        git_sha=first.git_sha if pd.notna(first.git_sha) else ""))
    return out


def measured_tables(df: pd.DataFrame) -> list[dict]:
    """One table per measured device and run: the post's configurations (not the block search), each
    measured once (XLA's rows are shared by the experiments of its dtype)."""
    rows = df[(df.source == "measured") & ~df.search.eq(True)]
    rows = rows.drop_duplicates(["target", "run_label", "kernel", "dtype", "m", "k", "n", "bm", "bk", "bn",
                                 "vmem_limit_bytes"])
    out = []
    for (target, label), group in rows.groupby(["target", "run_label"], sort=True):
        first = group.iloc[0]
        body = []
        for r in group.sort_values(["kernel", "dtype", "bm", "bk", "bn", "vmem_limit_bytes", "m"]).itertuples():
            ok = r.status == "ok" and pd.notna(r.seconds)
            flop = float(flops(r.m, r.k, r.n))
            body.append(dict(
                kernel=r.kernel, config=config_label(r), dtype=r.dtype, m=r.m, status=r.status,
                limit_mib=f"{r.vmem_limit_bytes / MiB:.0f}" if pd.notna(r.vmem_limit_bytes) else "–",
                tflops=f"{r.tflops:.2f} ({flop / r.p75_seconds / 1e12:.2f}–{flop / r.p25_seconds / 1e12:.2f})"
                if ok else "–",
                wall_tflops=f"{flop / r.wall_seconds / 1e12:.2f}" if ok else "–",
                n=int(r.n_samples) if ok else 0,
                ratio=f"{r.measured_over_estimate:.2f}" if pd.notna(r.measured_over_estimate) else "–",
            ))
        out.append(dict(target=target, label=label, device_kind=first.device_kind,
                        chips=int(first.num_chips) if pd.notna(first.num_chips) else 1,
                        jax=first.jax_version, timestamp=first.timestamp, rows=body))
    return out
