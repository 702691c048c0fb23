"""The figure functions. Each takes the tidy table (results/matmul.parquet) and a language, and returns
a Matplotlib figure; nothing else is read. Estimates are dashed, measurements solid, published numbers
hollow markers; failed configurations are ✗ marks with their reason, never left out."""
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D

from experiments.analysis.summaries import default_limit, fidelity, post_configs
from experiments.core.units import MiB, flops
from figures.labels import SOURCE_NAMES, text

SOURCES = ("published", "estimate", "measured")
SOURCE_STYLE = {
    "estimate": dict(linestyle="--", marker="o", markersize=4),
    "measured": dict(linestyle="-", marker="s", markersize=4),
    "published": dict(linestyle="none", marker="o", markersize=7, markerfacecolor="none", markeredgewidth=1.3),
}
XLA_COLOR = "#000000"
COLORS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999"]
TARGET_COLORS = {"v4": "#999999", "v5e": "#0072B2", "v5p": "#009E73", "v6e": "#E69F00", "7x": "#CC79A7"}


def modelled(rows: pd.DataFrame, column: str) -> tuple[pd.DataFrame, bool]:
    """Estimate rows with `tflops` replaced by the timing model's `column` (model_post_tflops: timed as
    the post did, for its figures; model_device_tflops: device time), where the table has it."""
    if column not in rows or not rows[column].notna().any():
        return rows, False
    out = rows.copy()
    est = out.source == "estimate"
    out.loc[est, "tflops"] = out.loc[est, column]
    return out, True


def config_label(row, lang: str) -> str:
    if row.kernel == "xla":
        return text(lang, "xla")
    if pd.isna(row.bm):
        return text(lang, "kernel", kernel=row.kernel)
    if row.kernel == "v2":
        return f"{text(lang, 'kernel', kernel='v2')}, {text(lang, 'splits', n=int(row.m // row.bm))}"
    return text(lang, "blocks", bm=int(row.bm), bk=int(row.bk), bn=int(row.bn))


def config_key(row) -> tuple:
    """A series: the kernel, or its blocks (one colour per block shape across v3/v4/v5 panels; v2's
    blocks scale with size, so its split count N identifies it)."""
    if row.kernel == "v2":
        return ("v2", int(row.m // row.bm))
    if pd.isna(row.bm):
        return (row.kernel,)
    return ("blocks", int(row.bm), int(row.bk), int(row.bn))


def sort_key(key: tuple) -> tuple:
    """XLA first, then kernels and blocks in numeric order."""
    return (key[0] != "xla", key[0], *key[1:])


def series_colors(keys) -> dict:
    blocked = [k for k in sorted(keys, key=sort_key) if k[0] != "xla"]
    colors = {k: COLORS[i % len(COLORS)] for i, k in enumerate(blocked)}
    colors.update({k: XLA_COLOR for k in keys if k[0] == "xla"})
    return colors


def no_data(ax, lang):
    ax.text(0.5, 0.5, text(lang, "no_data"), ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


def size_axis(ax, sizes, lang):
    ax.set_xscale("log", base=2)
    ticks = sorted(set(int(s) for s in sizes))
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel(text(lang, "size"))


def provenance_note(rows: pd.DataFrame, lang: str, post_method: bool = False) -> str:
    """One line per source present: how its numbers were obtained."""
    lines = []
    for source in SOURCES:
        part = rows[rows.source == source]
        if part.empty:
            continue
        first = part.iloc[0]
        if source == "estimate":
            key = "source_modelled_post" if post_method else "source_estimate"
            lines.append(text(lang, key, libtpu=first.libtpu_version, target=first.target,
                              device_kind=first.device_kind))
        elif source == "measured":
            lines.append(text(lang, "source_measured", device_kind=first.device_kind))
        else:
            lines.append(text(lang, "source_published"))
    return "\n".join(lines)


def failure_lines(failed: list[tuple], lang: str) -> list[str]:
    """One line per (configuration, reason), listing the sizes it failed at."""
    groups = {}
    for row, label in failed:
        if row.source == "published":
            key = (label, "published", None, None)
        elif row.status == "vmem_oom" and pd.notna(row.vmem_bytes):
            limit = row.oom_limit_bytes if pd.notna(row.oom_limit_bytes) else row.vmem_limit_bytes
            # v1's need grows with size: one line per distinct need
            # rows not compiled because their blocks alone exceed VMEM carry a lower bound
            reason = "bound" if str(row.error).startswith("not compiled") else "vmem"
            key = (label, reason, round(row.vmem_bytes / MiB, 1), round(limit / MiB))
        else:
            key = (label, row.status, None, None)
        groups.setdefault(key, []).append(int(row.m))
    lines = []
    for (label, reason, need, limit), sizes in groups.items():
        where = f"{label} @ {', '.join(str(s) for s in sorted(set(sizes)))}"
        if reason == "published":
            lines.append(text(lang, "failed_published", label=where))
        elif reason in ("vmem", "bound"):
            key = "failed_estimate" if reason == "vmem" else "failed_estimate_bound"
            lines.append(text(lang, key, label=where, need=need, limit=limit))
        else:
            lines.append(text(lang, "failed_other", label=where, status=reason))
    return lines


def peak_line(ax, rows: pd.DataFrame, lang: str):
    peaks = rows.peak_tflops.dropna() if "peak_tflops" in rows else pd.Series(dtype=float)
    if len(peaks):
        peak = float(peaks.iloc[0])
        ax.axhline(peak, color="#555555", linestyle=":", linewidth=1)
        ax.annotate(text(lang, "peak", peak=peak), (1, peak), xycoords=("axes fraction", "data"),
                    ha="right", va="bottom", fontsize=7, color="#555555")


def plot_experiment(df: pd.DataFrame, experiment: str, dtype: str, target: str, lang: str):
    """The post's figure for one experiment: TFLOP/s against size, one series per configuration."""
    rows = post_configs(default_limit(df[(df.experiment == experiment) & (df.dtype == dtype)
                                         & (df.target == target)]))
    # Estimates timed as the post timed its numbers (one blocked call), so they compare with its points.
    rows, post_method = modelled(rows, "model_post_tflops")
    fig = plt.figure(figsize=(6.4, 4.4))
    grid = fig.add_gridspec(2, 1, height_ratios=[3.4, 1.0])
    ax, info = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
    info.set_axis_off()
    description = text(lang, f"description_{experiment}") if experiment in ("v1", "v2", "v3", "v4", "v5") \
        else text(lang, "description_other")
    ax.set_title(text(lang, "title_experiment", experiment=experiment, description=description, dtype=dtype,
                      target=target))
    if rows.empty:
        no_data(ax, lang)
        return fig
    keys = sorted({config_key(r) for r in rows.itertuples()}, key=sort_key)
    colors = series_colors(keys)
    failures, handles = [], []
    for key in keys:
        series = rows[[config_key(r) == key for r in rows.itertuples()]]
        label = config_label(series.iloc[0], lang)
        handles.append(Line2D([], [], color=colors[key], label=label, linewidth=2))
        for source in SOURCES:
            part = series[series.source == source].sort_values("m")
            ok = part[(part.status == "ok") & part.tflops.notna()]
            if len(ok):
                ax.plot(ok.m, ok.tflops, color=colors[key], **SOURCE_STYLE[source])
            for r in part[part.status != "ok"].itertuples():
                ax.plot([r.m], [0], marker="x", color=colors[key], markersize=8, clip_on=False, zorder=5)
                failures.append((r, label))
    peak_line(ax, rows, lang)
    size_axis(ax, rows.m, lang)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(text(lang, "tops" if dtype == "int8" else "tflops"))
    names = dict(SOURCE_NAMES[lang], **({"estimate": text(lang, "modelled_post")} if post_method else {}))
    styles = [Line2D([], [], color="#444444", label=names[s], **SOURCE_STYLE[s])
              for s in SOURCES if (rows.source == s).any()]
    # Below the plot: the legend, then the failures and how each source's numbers were obtained.
    notes = failure_lines(failures, lang) + [provenance_note(rows, lang, post_method)]
    if "estimate_nonmonotonic" in rows:  # XLA estimates that fall with size: a cost-model artefact
        flagged = rows[(rows.source == "estimate") & rows.estimate_nonmonotonic.eq(True)]
        if len(flagged):
            sizes = ", ".join(str(int(m)) for m in sorted(set(flagged.m)))
            notes.insert(0, text(lang, "flagged_xla", sizes=sizes))
    legend_rows = int(np.ceil((len(handles) + len(styles)) / 3))
    fig.set_figheight(4.4 + 0.13 * (legend_rows + sum(n.count("\n") + 1 for n in notes)))
    grid.set_height_ratios([3.4, 0.2 * legend_rows + 0.13 * sum(n.count("\n") + 1 for n in notes)])
    info.legend(handles=handles + styles, loc="upper left", ncol=3, fontsize=7, borderaxespad=0)
    info.text(0, 0, "\n".join(notes), fontsize=6.5, va="bottom", ha="left", transform=info.transAxes)
    return fig


def plot_vmem(df: pd.DataFrame, target: str, lang: str):
    """VMEM used (or requested) by the post's configurations against the scoped limit."""
    rows = post_configs(df[(df.source == "estimate") & (df.target == target) & (df.kernel != "xla")])
    panels = sorted(rows.groupby(["experiment", "dtype"]).groups) if len(rows) else []
    ncols = 3
    nrows = max(1, int(np.ceil(len(panels) / ncols)))
    fig, axes = plt.subplots(nrows, ncols, figsize=(9, 2.9 * nrows + 0.6), squeeze=False, sharey=True)
    libtpu = rows.libtpu_version.iloc[0] if len(rows) else "?"
    fig.suptitle(text(lang, "title_vmem", target=target, libtpu=libtpu))
    if not panels:
        no_data(axes[0][0], lang)
    for ax in axes.flat[len(panels):]:
        ax.set_axis_off()
    colors = series_colors({config_key(r) for r in rows.itertuples()})
    labels = {}
    for ax, (experiment, dtype) in zip(axes.flat, panels):
        panel = rows[(rows.experiment == experiment) & (rows.dtype == dtype)]
        keys = sorted({config_key(r) for r in panel.itertuples()}, key=sort_key)
        for key in keys:
            series = panel[[config_key(r) == key for r in panel.itertuples()]].sort_values("m")
            color = colors[key]
            labels.setdefault(key, config_label(series.iloc[0], lang))
            base = default_limit(series)
            ax.plot(base.m, base.vmem_bytes / MiB, color=color, linestyle="--", linewidth=1)
            ok = base[base.status == "ok"]
            oom = base[base.status == "vmem_oom"]
            ax.plot(ok.m, ok.vmem_bytes / MiB, "o", color=color, markersize=4)
            ax.plot(oom.m, oom.vmem_bytes / MiB, "x", color=color, markersize=7, markeredgewidth=1.5)
            raised = series[series.raised_limit.astype(bool) & (series.status == "ok")]
            ax.plot(raised.m, raised.vmem_bytes / MiB, "s", color=color, markerfacecolor="none", markersize=8)
        limits = default_limit(panel).vmem_limit_bytes.dropna()
        if len(limits):
            ax.axhline(limits.iloc[0] / MiB, color="#D55E00", linewidth=1)
            ax.annotate(text(lang, "limit_default", limit=limits.iloc[0] / MiB), (0.02, limits.iloc[0] / MiB),
                        xycoords=("axes fraction", "data"), va="bottom", fontsize=6.5, color="#D55E00")
        ax.set_yscale("log")
        size_axis(ax, panel.m, lang)
        ax.set_title(f"{experiment} ({dtype})", fontsize=9)
    for ax in axes[:, 0]:
        ax.set_ylabel(text(lang, "vmem"))
    series = [Line2D([], [], color=colors[k], linestyle="--", label=labels[k]) for k in sorted(labels, key=sort_key)]
    markers = [Line2D([], [], marker="o", linestyle="none", color="#444444", label=text(lang, "ok_default")),
               Line2D([], [], marker="x", linestyle="none", color="#444444", label=text(lang, "oom")),
               Line2D([], [], marker="s", linestyle="none", color="#444444", markerfacecolor="none",
                      label=text(lang, "ok_raised_any"))]
    fig.legend(handles=series + markers, loc="outside lower center", ncol=4, fontsize=7)
    return fig


def plot_roofline(df: pd.DataFrame, target: str, lang: str):
    """Arithmetic intensity against estimated TFLOP/s, under the target's compute and HBM roofs."""
    rows = default_limit(df[(df.source == "estimate") & (df.target == target) & (df.status == "ok")])
    rows, device = modelled(rows, "model_device_tflops")
    rows = rows[rows.tflops.notna() & (rows.hbm_bytes > 0)]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    libtpu = rows.libtpu_version.iloc[0] if len(rows) else "?"
    ax.set_title(text(lang, "title_roofline", target=target, libtpu=libtpu))
    if rows.empty:
        no_data(ax, lang)
        return fig
    intensity = flops(rows.m, rows.k, rows.n) / rows.hbm_bytes.astype(float)
    bw = float(rows.hbm_bytes_per_s.iloc[0])
    x = np.logspace(np.log10(intensity.min() / 2), np.log10(intensity.max() * 2), 200)
    peaks = rows.groupby("dtype").peak_tflops.first()
    for j, (peak, dtypes) in enumerate(peaks.groupby(peaks).groups.items()):
        ax.plot(x, np.minimum(peak, bw * x / 1e12), color="#555555", linestyle=["-", ":", "-."][j % 3],
                linewidth=1, label=text(lang, "compute_roof", peak=peak, dtype=", ".join(sorted(dtypes))))
    markers = {"float32": "o", "bfloat16": "s", "int8": "^"}
    xla = rows[rows.kernel == "xla"].drop_duplicates(["dtype", "m", "k", "n"])
    rows = rows[rows.kernel != "xla"]
    ax.scatter(intensity[xla.index], xla.tflops, s=16, marker="D", color=XLA_COLOR, label=text(lang, "xla"))
    for i, (experiment, group) in enumerate(rows.groupby("experiment")):
        for dtype, part in group.groupby("dtype"):
            ax.scatter(intensity[part.index], part.tflops, s=12, marker=markers.get(dtype, "o"),
                       color=COLORS[i % len(COLORS)], alpha=0.8, label=f"{experiment} {dtype}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(text(lang, "intensity"))
    ax.set_ylabel(text(lang, "device_axis" if device else "estimated_axis"))
    ax.annotate(text(lang, "hbm_roof", bw=bw / 1e9), (x[0], bw * x[0] / 1e12), fontsize=7, color="#555555")
    ax.legend(fontsize=6, ncol=2, loc="lower right")
    return fig


def plot_search(df: pd.DataFrame, experiment: str, dtype: str, target: str, lang: str):
    """Heatmaps over bm x bn of the best estimated TFLOP/s over bk, one panel per size."""
    rows = default_limit(df[(df.source == "estimate") & (df.experiment == experiment) & (df.dtype == dtype)
                            & (df.target == target) & (df.kernel != "xla")])
    rows, device = modelled(rows, "model_device_tflops")
    searched = rows[rows.search.eq(True)] if "search" in rows else rows.iloc[0:0]
    sizes = sorted(searched.m.unique())
    rows = rows[rows.m.isin(sizes)]
    fig, axes = plt.subplots(1, max(1, len(sizes)), figsize=(3.3 * max(1, len(sizes)), 3.6), squeeze=False)
    fig.suptitle(text(lang, "title_search", experiment=experiment, dtype=dtype, target=target))
    if not sizes:
        no_data(axes[0][0], lang)
        return fig
    bms = sorted(rows.bm.dropna().unique())
    bns = sorted(rows.bn.dropna().unique())
    vmax = rows.tflops.max()
    for ax, size in zip(axes[0], sizes):
        grid = np.full((len(bms), len(bns)), np.nan)
        best_bk = {}
        for (bm, bn), cell in rows[rows.m == size].groupby(["bm", "bn"]):
            ok = cell[cell.status == "ok"].dropna(subset=["tflops"])
            i, j = bms.index(bm), bns.index(bn)
            if len(ok):
                best = ok.loc[ok.tflops.idxmax()]
                grid[i, j] = best.tflops
                best_bk[(i, j)] = int(best.bk)
            else:
                best_bk[(i, j)] = None
        image = ax.imshow(grid, origin="lower", cmap="viridis", vmin=0, vmax=vmax, aspect="auto")
        for (i, j), bk in best_bk.items():
            label = "×" if bk is None else f"{grid[i, j]:.0f}\n{text(lang, 'best_bk', bk=bk)}"
            color = "black" if bk is None or grid[i, j] > 0.6 * vmax else "white"
            ax.text(j, i, label, ha="center", va="center", fontsize=6, color=color)
        ax.set_xticks(range(len(bns)), [str(int(b)) for b in bns])
        ax.set_yticks(range(len(bms)), [str(int(b)) for b in bms])
        ax.set_xlabel(text(lang, "bn"))
        ax.set_ylabel(text(lang, "bm"))
        ax.set_title(text(lang, "size_panel", size=size), fontsize=9)
        ax.grid(False)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8,
                 label=text(lang, "device_axis" if device else "estimated_axis"))
    return fig


def plot_fidelity(df: pd.DataFrame, target: str, lang: str):
    """Estimated against published (and measured) TFLOP/s, log-log, with y = x and the agreement."""
    others = [s for s in ("published", "measured") if ((df.source == s) & (df.target == target)).any()]
    fig, axes = plt.subplots(1, max(1, len(others)), figsize=(4.6 * max(1, len(others)), 4.4), squeeze=False)
    if not others:
        no_data(axes[0][0], lang)
        return fig
    estimates = default_limit(df[(df.source == "estimate") & (df.target == target) & (df.status == "ok")])
    for ax, other in zip(axes[0], others):
        ref = df[(df.source == other) & (df.target == target) & (df.status == "ok")]
        keys = ["experiment", "kernel", "dtype", "m", "k", "n", "bm", "bk", "bn"]
        pairs = estimates.merge(ref[keys + ["tflops"]], on=keys, suffixes=("", "_ref"))
        pairs = pairs[pairs.m >= 2048]
        xla = pairs[pairs.kernel == "xla"].drop_duplicates(keys[1:])  # one point per baseline config
        pairs = pairs[pairs.kernel != "xla"]
        ax.set_title(text(lang, "title_fidelity", source=SOURCE_NAMES[lang][other], target=target), fontsize=10)
        if pairs.empty:
            no_data(ax, lang)
            continue
        for i, (experiment, group) in enumerate(pairs.groupby("experiment")):
            ax.scatter(group.tflops_ref, group.tflops, s=18, color=COLORS[i % len(COLORS)], label=experiment)
        ax.scatter(xla.tflops_ref, xla.tflops, s=22, marker="D", color=XLA_COLOR, label=text(lang, "xla"))
        both = pd.concat([pairs, xla])
        lo = min(both.tflops.min(), both.tflops_ref.min()) / 1.5
        hi = max(both.tflops.max(), both.tflops_ref.max()) * 1.5
        ax.plot([lo, hi], [lo, hi], color="#555555", linewidth=1, label=text(lang, "identity"))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel(text(lang, "reference_axis", source=SOURCE_NAMES[lang][other]))
        ax.set_ylabel(text(lang, "estimated_axis"))
        overall = fidelity(df, target=target, other=other).set_index("experiment").loc["all"]
        ax.text(0.03, 0.97, text(lang, "agreement", n=int(overall.n), ratio=overall.median_ratio,
                                 spearman=overall.spearman), transform=ax.transAxes, va="top", fontsize=7)
        ax.legend(fontsize=7, loc="lower right")
    return fig


def plot_generations(df: pd.DataFrame, experiment: str, dtype: str, lang: str):
    """The best estimated Pallas configuration and XLA per size, one colour per TPU generation."""
    rows = default_limit(df[(df.source == "estimate") & (df.experiment == experiment) & (df.dtype == dtype)
                            & (df.status == "ok")])
    rows, device = modelled(rows, "model_device_tflops")
    rows = rows.dropna(subset=["tflops"])
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.set_title(text(lang, "title_generations", experiment=experiment, dtype=dtype))
    if rows.empty:
        no_data(ax, lang)
        return fig
    for target, group in rows.groupby("target"):
        color = TARGET_COLORS.get(target, "#444444")
        xla = group[group.kernel == "xla"].sort_values("m")
        pallas = group[group.kernel != "xla"].groupby("m").tflops.max()
        ax.plot(pallas.index, pallas.values, color=color, linestyle="--", marker="o", markersize=4,
                label=text(lang, "best_pallas", target=target))
        ax.plot(xla.m, xla.tflops, color=color, linestyle="--", marker="^", markersize=4, alpha=0.6,
                linewidth=1, label=text(lang, "xla_target", target=target))
    size_axis(ax, rows.m, lang)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(text(lang, "device_axis" if device else "estimated_axis"))
    ax.legend(fontsize=7, ncol=2)
    return fig
