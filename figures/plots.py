"""The figure functions: each takes the tidy table and a language and returns a Matplotlib figure
(`narrow`: the phone's variant); conventions in docs/outputs.md, "Figures"."""
import re

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from tpu_matmul_repro.analysis.summaries import MATCH, MIN_RANK_POINTS, default_limit, post_configs
from tpu_matmul_repro.analysis.views import (
    banded,
    experiment_rows,
    fidelity_panels,
    flagged,
    modelled,
    versions,
)
from tpu_matmul_repro.experiments.core import cases
from tpu_matmul_repro.experiments.core.chips import CHIPS, POST_CHIP, generation_order
from tpu_matmul_repro.experiments.core.schema import SOURCES
from tpu_matmul_repro.experiments.core.units import TERA, MiB, flops, unit_name
from tpu_matmul_repro.figures.labels import join, reason_key, source_names, text
from tpu_matmul_repro.kernels import is_pallas, kernel_facts
from tpu_matmul_repro.kernels.checks import DTYPES
from tpu_matmul_repro.kernels.spec import SPLIT

SOURCE_STYLE = {
    "estimate": dict(linestyle="--", marker="o", markersize=4),
    "measured": dict(linestyle="-", marker="s", markersize=4),
    "published": dict(linestyle="none", marker="o", markersize=7, markerfacecolor="none",
                      markeredgewidth=1.3),
}
XLA_COLOR = "#000000"
LIMIT_COLOR = "#333333"  # dark grey, dash-dot: in no series' palette
# Okabe-Ito without its yellow (too pale on white for a thin line), plus Tol's wine.
COLORS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#882255", "#999999"]
ROOF_MARKERS = ["o", "s", "^", "v", "P", "X", "*"]


def flagged_line(rows: pd.DataFrame, lang: str) -> list[str]:
    hit = rows[flagged(rows)]
    if hit.empty:
        return []
    groups = sorted(hit.groupby("target"), key=lambda kv: generation_order(kv[0]))
    # the targets that share their flagged sizes, together ("8192 on v5e, v6e", not "v5e 8192; v6e 8192")
    targets_at = {}
    for target, group in groups:
        targets_at.setdefault(", ".join(str(int(m)) for m in sorted(set(group.m))), []).append(target)
    where = next(iter(targets_at)) if len(groups) == 1 else join(lang, "sentences", (
        text(lang, "sizes_on", sizes=sizes, targets=join(lang, "list", targets))
        for sizes, targets in targets_at.items()))
    return [text(lang, "flagged_xla", sizes=where)]


# At most this many lines of notes under a plot; the rest go into its caption and file metadata.
MAX_NOTE_LINES = 3
# The phone's variant of a figure (catalog.Entry.narrow): this wide, so that at a phone's 390 px its
# 8.5 pt legend is about 11 px; its notes wrapped to fit.
NARROW_INCHES = 4.2
NARROW_NOTE_COLUMNS = 50


def notes_kept(notes: list[str], width: int = 92) -> int:
    """How many of the notes, from the first, capped() draws whole."""
    lines = [wrap(n, width).count("\n") + 1 for n in notes]
    if sum(lines) <= MAX_NOTE_LINES:
        return len(notes)
    kept, used = 0, 0
    for n in lines:
        if used + n > MAX_NOTE_LINES - 1:
            break
        kept, used = kept + 1, used + n
    return max(kept, min(1, len(notes)))  # the first note is drawn, however long


def capped(notes: list[str], lang: str, width: int = 92) -> str:
    """The notes wrapped, whole, as many as fit MAX_NOTE_LINES (the first always); a last line says where
    the rest are."""
    kept = notes_kept(notes, width)
    wrapped = [wrap(n, width) for n in notes[:kept]]
    return "\n".join(wrapped + ([wrap(text(lang, "more_notes"), width)] if kept < len(notes) else []))


def missing_lines(rows: pd.DataFrame, lang: str) -> list[str]:
    """One line per configuration whose estimate compiled but has no number to draw, and why."""
    bare = rows[(rows.source == "estimate") & (rows.status == "ok") & rows.tflops.isna()]
    groups = {}  # reason -> {configuration: sizes}
    for r in bare.itertuples():
        reason = reason_key(r.cycles_method)
        configs = groups.setdefault(reason, {})
        configs.setdefault(config_label(r, lang), set()).add(int(r.m))
    lines = []
    for reason, configs in groups.items():
        why = text(lang, reason)
        every = set().union(*configs.values())
        labels = [label if sizes == every else f"{label} @ {', '.join(str(s) for s in sorted(sizes))}"
                  for label, sizes in configs.items()]
        lines.append(text(lang, "missing_cycles", label="; ".join(labels), reason=why,
                          sizes=", ".join(str(s) for s in sorted(every))))
    return lines


def config_label(row, lang: str | None = None) -> str:
    """A configuration's label in `lang` for a legend; language-neutral (None) for a table's row header."""
    names = lang or "en"
    if not kernel_facts(row.kernel).pallas:
        return text(names, "xla")
    blocks = cases.config_label(row.kernel, row.m, row.bm, row.bk, row.bn)
    if not blocks:
        return text(names, "kernel", kernel=row.kernel)
    if kernel_facts(row.kernel).grid == SPLIT:
        return f"{text(names, 'kernel', kernel=row.kernel)}, {blocks}"
    return text(lang, "blocks", blocks=blocks) if lang else blocks


def config_key(row) -> tuple:
    """A series: the kernel, or its blocks (one colour per block shape across panels; v2 by its N)."""
    if kernel_facts(row.kernel).grid == SPLIT:
        return (row.kernel, int(row.m // row.bm))
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


def present_sources(rows: pd.DataFrame, order=SOURCES):
    """(source, its rows, its first row) for each source the rows hold, in `order`."""
    for source in order:
        part = rows[rows.source == source]
        if len(part):
            yield source, part, part.iloc[0]


OPENING, CLOSING = "（《“「【", "，。、；：！？）》”」】"


def wrap(note: str, width: int = 92, indent: str = "    ") -> str:
    """Wrap a note to `width` columns (a CJK character counts two), later lines of a paragraph indented."""
    out = []
    for paragraph in note.split("\n"):
        line, used = "", 0
        # one CJK character, or a Latin word with its trailing space, or a run of spaces
        for word in re.findall(r"[\u2e80-\u9fff\uff00-\uffef]|[^\s\u2e80-\u9fff\uff00-\uffef]+\s*|\s+",
                               paragraph):
            cols = sum(2 if "\u2e80" <= ch <= "\uffef" else 1 for ch in word)
            # Chinese line breaking: closing punctuation never starts a line (it overhangs this one), an
            # opening bracket never ends one (it moves down with the word after it)
            if used + cols > width and line.strip() and word not in CLOSING:
                carry = line[-1] if line[-1] in OPENING else ""
                out.append(line[:len(line) - len(carry)].rstrip())
                line = indent + carry + word.lstrip()
                used = len(indent) + 2 * len(carry) + cols
            else:
                line, used = line + word, used + cols
        out.append(line.rstrip())
    return "\n".join(out)


def failure_lines(failed: list[tuple], lang: str, post_ran: frozenset = frozenset()) -> list[str]:
    """One line per (configuration, reason) with the sizes it failed at; a compile that fails where the
    post ran it (`post_ran`: (config_key, size) pairs) names today's compiler."""
    groups = {}
    for row, label in failed:
        if row.source == "published":
            key = (label, "published", None, None, None)
        elif row.status == "vmem_oom" and pd.notna(row.vmem_bytes):
            limit = row.oom_limit_bytes if pd.notna(row.oom_limit_bytes) else row.vmem_limit_bytes
            # v1's need grows with size: one line per distinct need
            # rows not compiled because their blocks alone exceed VMEM carry a lower bound
            reason = "bound" if str(row.error).startswith("not compiled") else "vmem"
            if reason == "vmem" and (config_key(row), int(row.m)) in post_ran:
                reason = "today"
            libtpu = getattr(row, "libtpu_version", None)
            key = (label, reason, round(row.vmem_bytes / MiB, 1), round(limit / MiB),
                   libtpu if isinstance(libtpu, str) else "?")
        else:
            key = (label, row.status, None, None, None)
        groups.setdefault(key, []).append(int(row.m))
    lines = []
    for (label, reason, need, limit, libtpu), sizes in groups.items():
        where = f"{label} @ {', '.join(str(s) for s in sorted(set(sizes)))}"
        if reason == "published":
            lines.append(text(lang, "failed_published", label=where))
        elif reason == "today":
            lines.append(text(lang, "failed_today", label=where, need=need, limit=limit, libtpu=libtpu))
        elif reason in ("vmem", "bound"):
            key = "failed_estimate" if reason == "vmem" else "failed_estimate_bound"
            lines.append(text(lang, key, label=where, need=need, limit=limit))
        else:
            lines.append(text(lang, "failed_other", label=where, status=reason))
    return lines


# At least 8.5 pt in the PDF report, where a 6.4-inch figure is printed about 1.1 times its size.
NOTE_SIZE = 8.5
LEGEND_SIZE = 8.5


def peak_line(ax, rows: pd.DataFrame, lang: str):
    peaks = rows.peak_tflops.dropna() if "peak_tflops" in rows else pd.Series(dtype=float)
    if len(peaks):
        peak = float(peaks.iloc[0])
        ax.axhline(peak, color="#555555", linestyle=":", linewidth=1)
        # Above the line, not on it: offset by a few points, with room left above.
        ax.annotate(text(lang, "peak", peak=peak), (1, peak), xycoords=("axes fraction", "data"),
                    xytext=(0, 3), textcoords="offset points", ha="right", va="bottom", fontsize=NOTE_SIZE,
                    color="#555555")
        ax.set_ylim(top=max(ax.get_ylim()[1], peak * 1.12))


def main_source(rows: pd.DataFrame) -> str:
    """The source a series' legend key is drawn in: measured, else estimated, else published."""
    for source in ("measured", "estimate", "published"):
        if (rows.source == source).any():
            return source
    return "estimate"


def kinds_drawn(rows: pd.DataFrame, lang: str, post_method: bool = False) -> str:
    """The kinds of number the rows hold, by the four names (estimates "modelled" where `post_method`)."""
    names = source_names(lang)
    return join(lang, "list", (text(lang, "modelled") if s == "estimate" and post_method else names[s]
                               for s in ("estimate", "measured", "published") if (rows.source == s).any()))


def dodge(points: pd.DataFrame, key_order: dict, span: float) -> dict:
    """Small sideways offsets (in octaves) spreading hollow points closer than 4 % of the axis span at
    one size, in series order, so every published point stays visible."""
    offsets = {}
    for _, at_size in points.groupby("m"):
        at_size = at_size.sort_values("tflops")
        cluster = []
        for idx, row in at_size.iterrows():
            if cluster and row.tflops - at_size.loc[cluster[-1]].tflops > 0.04 * span:
                offsets.update(_spread(cluster, at_size, key_order))
                cluster = []
            cluster.append(idx)
        offsets.update(_spread(cluster, at_size, key_order))
    return offsets


def _spread(cluster, rows, key_order) -> dict:
    if len(cluster) < 2:
        return {i: 0.0 for i in cluster}
    ordered = sorted(cluster, key=lambda i: key_order[config_key(rows.loc[i])])
    return {i: (j - (len(ordered) - 1) / 2) * 0.07 for j, i in enumerate(ordered)}


def plot_experiment(df: pd.DataFrame, experiment: str, dtype: str, target: str, lang: str,
                    narrow: bool = False):
    """The post's figure for one experiment: TFLOP/s against size, one series per configuration."""
    rows, post_method, notes = experiment_view(df, experiment, dtype, target, lang)
    failures = len(failure_notes(rows, lang))
    drawn = rows[~flagged(rows)]
    fig = plt.figure(figsize=(NARROW_INCHES if narrow else 6.4, 4.4))
    grid = fig.add_gridspec(2, 1, height_ratios=[3.4, 1.0])
    ax, info = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
    info.set_axis_off()
    # One line: the kinds of number drawn, so that a cropped plot still says it; what the experiment
    # runs and how far the model is off out of sample are in the caption (catalog.describe).
    ax.set_title(text(lang, "title_experiment", experiment=experiment, dtype=dtype, target=target,
                      kinds=kinds_drawn(rows, lang, post_method)) if len(rows) else
                 text(lang, "title_experiment_empty", experiment=experiment, dtype=dtype, target=target))
    if rows.empty:
        no_data(ax, lang)
        return fig
    keys = sorted({config_key(r) for r in rows.itertuples()}, key=sort_key)
    colors = series_colors(keys)
    key_order = {k: i for i, k in enumerate(keys)}
    published_ok = rows[(rows.source == "published") & (rows.status == "ok") & rows.tflops.notna()]
    offsets = dodge(published_ok, key_order, span=max(float(rows.tflops.max()), 1.0))
    # Legend keys drawn as the series are: dashed where the lines are estimates, solid if measured.
    key_style = {k: v for k, v in SOURCE_STYLE[main_source(rows)].items() if k != "markersize"}
    handles = []
    for key in keys:
        series = drawn[[config_key(r) == key for r in drawn.itertuples()]]
        if series.empty:
            continue
        label = config_label(series.iloc[0], lang)
        handles.append(Line2D([], [], color=colors[key], label=label, **key_style))
        for source in SOURCES:
            part = series[series.source == source].sort_values("m")
            ok = part[(part.status == "ok") & part.tflops.notna()]
            if len(ok):
                x = ok.m * np.exp2([offsets.get(i, 0.0) for i in ok.index]) if source == "published" else ok.m
                ax.plot(x, ok.tflops, color=colors[key], **SOURCE_STYLE[source])
                if source == "estimate" and post_method and "model_post_tflops_lo80" in ok:
                    band = ok.dropna(subset=["model_post_tflops_lo80", "model_post_tflops_hi80"])
                    if len(band) > 1:  # the timing model's 80 % prediction interval
                        ax.fill_between(band.m, band.model_post_tflops_lo80, band.model_post_tflops_hi80,
                                        color=colors[key], alpha=0.12, linewidth=0)
            for r in part[part.status != "ok"].itertuples():
                ax.plot([r.m], [0], marker="x", color=colors[key], markersize=8, clip_on=False, zorder=5)
    size_axis(ax, rows.m, lang)
    ax.set_ylim(bottom=0)
    peak_line(ax, rows, lang)
    ax.set_ylabel(axis_label(lang, dtype, "post" if post_method else "estimate"
                             if set(rows.source) == {"estimate"} else "mixed"))
    # post_method: the estimates drawn are the timing model's, timed as the post timed its calls
    names = dict(source_names(lang), **({"estimate": text(lang, "modelled_post")} if post_method else {}))
    styles = [Line2D([], [], color="#444444", label=names[s], **SOURCE_STYLE[s])
              for s in SOURCES if (rows.source == s).any()]
    if post_method and banded(rows):  # the shading's level, in the legend itself
        styles.append(Patch(facecolor="#444444", alpha=0.12, label=text(lang, "band_key")))
    # Below the plot: the legend, then at most three lines of notes (all of them: in the caption).
    width = NARROW_NOTE_COLUMNS if narrow else 92
    note = capped(notes, lang, width)
    if (rows.status != "ok").any():  # the × marks at zero: what they are; why, in the notes drawn
        # the failures' notes come first: "below" only where every one of them is drawn
        shown = notes_kept(notes, width) >= failures
        styles.append(Line2D([], [], color="#444444", marker="x", linestyle="none", markersize=7,
                             label=text(lang, "failed_key" if shown else "failed_key_caption")))
    note_lines = note.count("\n") + 1 if note else 0
    # Two columns: three of the longer keys ("blocks (1024, 1024, 1024)", the model's) are wider than
    # the figure, and the layout then shrinks the plot (the layout check finds the legend out of its strip).
    ncol = 1 if narrow else 2
    legend_rows = int(np.ceil((len(handles) + len(styles)) / ncol))
    # In inches: the plot keeps its height; the strip under it grows with the legend and the notes.
    plot_in, strip_in = (2.6 if narrow else 3.0), 0.19 * legend_rows + 0.15 * note_lines + 0.12
    fig.set_figheight(plot_in + strip_in + 1.1)
    grid.set_height_ratios([plot_in, strip_in])
    info.legend(handles=handles + styles, loc="upper left", ncol=ncol, fontsize=LEGEND_SIZE, borderaxespad=0)
    info.text(0, 0, note, fontsize=NOTE_SIZE, va="bottom", ha="left", transform=info.transAxes)
    return fig


def experiment_view(df: pd.DataFrame, experiment: str, dtype: str, target: str, lang: str):
    """(rows, modelled, notes) of one experiment's figure: the rows it draws, whether they are the
    timing model's, and every note on them (the caption prints all)."""
    rows, post_method = experiment_rows(default_limit(df[(df.experiment == experiment) & (df.dtype == dtype)
                                                          & (df.target == target)]))
    if rows.empty:
        return rows, post_method, []
    # Failures first (the × marks, which the legend says the notes explain), then what is not drawn
    # (missing, then flagged estimates: a line that stops), then the shading (the caption keeps every note).
    band = ([text(lang, "interval_band") + (text(lang, "interval_unchecked", target=target)
                                            if target != POST_CHIP else "")]
            if post_method and banded(rows) else [])
    notes = failure_notes(rows, lang) + missing_lines(rows, lang) + flagged_line(rows, lang) + band
    return rows, post_method, notes


def failure_notes(rows: pd.DataFrame, lang: str) -> list[str]:
    """The notes on the × marks of `rows`: each failure and why."""
    failed = [(r, config_label(r, lang)) for r in rows[rows.status != "ok"].itertuples()]
    ran = rows[(rows.source == "published") & (rows.status == "ok")]
    return failure_lines(failed, lang, frozenset((config_key(r), int(r.m)) for r in ran.itertuples()))


def axis_label(lang: str, dtype: str, kind: str) -> str:
    """The y-axis label of every throughput plot: the unit, then which number it is (`kind`: "post",
    "device", "estimate" or "mixed")."""
    return text(lang, f"axis_{kind}", unit=unit_name(dtype))


def plot_vmem(df: pd.DataFrame, target: str, lang: str, narrow: bool = False):
    """VMEM used (or requested) by the post's configurations against the scoped limit."""
    rows = post_configs(df[(df.source == "estimate") & (df.target == target) & is_pallas(df.kernel)])
    panels = sorted(rows.groupby(["experiment", "dtype"]).groups) if len(rows) else []
    ncols = 2 if narrow else 3
    nrows = max(1, int(np.ceil(len(panels) / ncols)))
    size = (NARROW_INCHES, 2.2 * nrows + 2.4) if narrow else (7.2, 2.6 * nrows + 1.2)
    fig, axes = plt.subplots(nrows, ncols, figsize=size, squeeze=False, sharey=True)
    limit_mib = None
    libtpu = rows.libtpu_version.iloc[0] if len(rows) else "?"
    fig.suptitle(text(lang, "title_vmem", target=target, libtpu=libtpu), fontsize=10 if narrow else None)
    if not panels:
        no_data(axes[0][0], lang)
    for ax in axes.flat[len(panels):]:
        ax.set_axis_off()
    colors = series_colors({config_key(r) for r in rows.itertuples()})
    labels = {}
    for ax, (experiment, dtype) in zip(axes.flat, panels, strict=False):
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
            limit_mib = limits.iloc[0] / MiB
            ax.axhline(limit_mib, color=LIMIT_COLOR, linewidth=1.4, linestyle="-.", zorder=1)
        ax.set_yscale("log")
        size_axis(ax, panel.m, lang)
        ax.set_title(f"{experiment} ({dtype})", fontsize=10)
    for ax in axes[:, 0]:
        ax.set_ylabel(text(lang, "vmem"))
    series = [Line2D([], [], color=colors[k], linestyle="--", label=labels[k])
              for k in sorted(labels, key=sort_key)]
    if limit_mib is not None:
        series.append(Line2D([], [], color=LIMIT_COLOR, linestyle="-.", linewidth=1.4,
                             label=text(lang, "limit_default", limit=limit_mib)))
    markers = [Line2D([], [], marker="o", linestyle="none", color="#444444", label=text(lang, "ok_default")),
               Line2D([], [], marker="x", linestyle="none", color="#444444", label=text(lang, "oom")),
               Line2D([], [], marker="s", linestyle="none", color="#444444", markerfacecolor="none",
                      label=text(lang, "ok_raised_any"))]
    fig.legend(handles=series + markers, loc="outside lower center", ncol=1 if narrow else 3,
               fontsize=LEGEND_SIZE)
    return fig


def plot_roofline(df: pd.DataFrame, target: str, lang: str, narrow: bool = False):
    """Arithmetic intensity against modelled (else estimated) throughput under the target's compute and
    HBM roofs, one panel per data type, one colour and marker per experiment."""
    rows, device, notes = roofline_view(df, target, lang)
    published = roofline_published(df, target)
    dtypes = [d for d in DTYPES if (rows.dtype == d).any()]
    dtypes += sorted(set(rows.dtype) - set(dtypes))
    panels = max(1, len(dtypes))
    note = capped(notes, lang, NARROW_NOTE_COLUMNS if narrow else 95)
    note_lines = note.count("\n") + 1 if note else 0
    # the legend's keys: XLA, each experiment, the post's points; on a phone one to a row
    keys_drawn = 1 + rows[rows.kernel != "xla"].experiment.nunique() + (2 if len(published) else 0)
    legend_rows = keys_drawn if narrow else (1 if keys_drawn <= WIDE_LEGEND_KEYS else 2)
    strip = 0.3 + 0.16 * note_lines + 0.22 * (legend_rows - 1)
    if narrow:  # one panel under another, the legend's strip under them
        fig = plt.figure(figsize=(NARROW_INCHES, 3.0 * panels + 0.6 + strip))
        grid = fig.add_gridspec(panels + 1, 1, height_ratios=[2.6] * panels + [strip + 0.3])
        axes = [fig.add_subplot(grid[i, 0]) for i in range(panels)]
        info = fig.add_subplot(grid[panels, 0])
    else:
        fig = plt.figure(figsize=(7.2, 4.4 + 0.16 * note_lines))
        grid = fig.add_gridspec(2, panels, height_ratios=[3.4, strip])
        axes = [fig.add_subplot(grid[0, i]) for i in range(panels)]
        info = fig.add_subplot(grid[1, :])
    info.set_axis_off()
    fig.suptitle(text(lang, "title_roofline_modelled" if device else "title_roofline", target=target,
                      libtpu=", ".join(versions(rows)) or "?"), fontsize=10 if narrow else None)
    if rows.empty:
        no_data(axes[0], lang)
        return fig
    intensity = flops(rows.m, rows.k, rows.n) / rows.hbm_bytes.astype(float)
    post_intensity = flops(published.m, published.k, published.n) / published.hbm_bytes.astype(float)
    bw = float(rows.hbm_bytes_per_s.iloc[0])
    every = pd.concat([intensity, post_intensity])
    x = np.logspace(np.log10(every.min() / 2), np.log10(every.max() * 2), 200)
    experiments = sorted(set(rows[rows.kernel != "xla"].experiment))
    style = {e: (COLORS[i % len(COLORS)], ROOF_MARKERS[i % len(ROOF_MARKERS)])
             for i, e in enumerate(experiments)}
    # Fewer points on top: v1 and v3 would hide under v4's cloud otherwise.
    order = sorted(experiments, key=lambda e: -(rows.experiment == e).sum())
    handles = {}
    for ax, dtype in zip(axes, dtypes, strict=True):
        part = rows[rows.dtype == dtype]
        post = published[published.dtype == dtype]
        peak = float(part.peak_tflops.iloc[0])
        label = text(lang, "compute_roof", peak=peak, dtype=dtype).replace("TFLOP/s", unit_name(dtype))
        ax.plot(x, np.minimum(peak, bw * x / TERA), color="#555555", linewidth=1, zorder=1)
        # In the empty corner above the HBM roof (no point can be there), wrapped to the panel; the
        # bandwidth too: written along the slope it lay over the low-intensity points.
        roofs = f"{wrap(label, 30, indent='')}\n{text(lang, 'hbm_roof', bw=bw / 1e9)}"
        xla = part[part.kernel == "xla"].drop_duplicates(["m", "k", "n"])
        # hollow: this run's (XLA's too), filled: the post's, as the marker-style keys say
        handles["xla"] = ax.scatter(intensity[xla.index], xla.tflops, s=22, marker="D", facecolors="none",
                                    edgecolors=XLA_COLOR, linewidths=1.1, label=text(lang, "xla"), zorder=4)
        for z, experiment in enumerate(order):
            points = part[(part.kernel != "xla") & (part.experiment == experiment)]
            if points.empty:
                continue
            color, marker = style[experiment]
            handles[experiment] = ax.scatter(intensity[points.index], points.tflops, s=20, marker=marker,
                                             facecolors="none", edgecolors=color, linewidths=1.1,
                                             label=experiment, zorder=5 + z)
        for experiment in ["xla", *order]:  # the post's own numbers, filled, in its series' colour and shape
            points = post[(post.kernel == "xla") if experiment == "xla" else
                          ((post.kernel != "xla") & (post.experiment == experiment))]
            if points.empty or (experiment != "xla" and experiment not in style):
                continue
            color, marker = (XLA_COLOR, "D") if experiment == "xla" else style[experiment]
            ax.scatter(post_intensity[points.index], points.tflops, s=14, marker=marker, color=color,
                       alpha=0.55, linewidths=0, zorder=4)
            handles["this run"] = Line2D([], [], marker="o", linestyle="none", markerfacecolor="none",
                                         markeredgecolor="#555555", markersize=5,
                                         label=text(lang, "this_run_key"))
            handles["published"] = Line2D([], [], marker="o", linestyle="none", color="#777777",
                                          markersize=5, label=text(lang, "published_key"))
        ax.set_xscale("log")
        ax.set_yscale("log")
        # room above the roof for its labels, and for every point and the HBM roof's foot
        lowest_post = float(post.tflops.min()) if len(post) else np.inf
        low = min(float(part.tflops.min()), lowest_post, bw * x[0] / TERA)
        ax.set_ylim(low / 1.5, max(peak, float(part.tflops.max())) * 4)
        place_clear(ax, roofs)
        ax.set_title(dtype, fontsize=10)
        ax.set_ylabel(axis_label(lang, dtype, "device" if device else "estimate"))
    # once, under the middle panel (narrow: the bottom one)
    axes[-1 if narrow else len(dtypes) // 2].set_xlabel(text(lang, "intensity"))
    series = [handles[k] for k in ["xla"] + [e for e in experiments if e in handles]]
    styles = [handles[k] for k in ["this run", "published"] if k in handles]
    keys = series + styles
    if not narrow and len(keys) > WIDE_LEGEND_KEYS:
        # two rows, filled by column: the last column the two marker styles (a blank key before them
        # where the series are odd in number)
        keys = series + [Line2D([], [], linestyle="none", label=" ")] * (len(series) % 2) + styles
    info.legend(handles=keys, loc="upper center", ncol=1 if narrow
                else (len(keys) if len(keys) <= WIDE_LEGEND_KEYS else len(keys) // 2),
                fontsize=LEGEND_SIZE, borderaxespad=0)
    info.text(0, 0, note, fontsize=NOTE_SIZE, va="bottom", ha="left", transform=info.transAxes)
    return fig


WIDE_LEGEND_KEYS = 4  # keys that fit one row under the wide roofline's panels (two panels)
# Where a panel's roof labels may go, in the axes' fraction: (x, y, ha, va), the first clear one wins
LABEL_CORNERS = ((0.97, 0.03, "right", "bottom"), (0.03, 0.97, "left", "top"), (0.03, 0.03, "left", "bottom"),
                 (0.97, 0.55, "right", "center"))


def place_clear(ax, label: str) -> None:
    """The roof labels in the first corner where no marker lies under them; else at the top left, the
    (log) y axis raised until the markers under them sit below."""
    renderer = ax.figure.canvas.get_renderer()

    def under(box):
        points = np.concatenate([ax.transData.transform(c.get_offsets()) for c in ax.collections
                                 if len(c.get_offsets())] or [np.empty((0, 2))])
        inside = ((points[:, 0] >= box.x0) & (points[:, 0] <= box.x1) & (points[:, 1] >= box.y0)
                  & (points[:, 1] <= box.y1))
        return points[inside]

    for x, y, ha, va in LABEL_CORNERS:
        t = ax.text(x, y, label, transform=ax.transAxes, ha=ha, va=va, fontsize=NOTE_SIZE, color="#555555")
        if not len(under(t.get_window_extent(renderer).expanded(1.05, 1.1))):
            return
        t.remove()
    x, y, ha, va = LABEL_CORNERS[1]
    t = ax.text(x, y, label, transform=ax.transAxes, ha=ha, va=va, fontsize=NOTE_SIZE, color="#555555")
    box, frame = t.get_window_extent(renderer).expanded(1.05, 1.1), ax.get_window_extent(renderer)
    column = box.from_extents(box.x0, frame.y0, box.x1, box.y1)  # every marker below the labels too
    hidden = under(column)
    if not len(hidden) or ax.get_yscale() != "log":
        return
    low, top = ax.get_ylim()
    bottom = (box.y0 - frame.y0) / frame.height - 0.02  # the labels' foot, in the axes' fraction
    highest = (hidden[:, 1].max() - frame.y0) / frame.height
    if 0 < bottom < highest:  # on a log axis a value's fraction shrinks as the decades above it grow
        ax.set_ylim(low, low * (top / low) ** (highest / bottom))


def roofline_view(df: pd.DataFrame, target: str, lang: str) -> tuple[pd.DataFrame, bool, list[str]]:
    """(rows, modelled, notes) of the roofline: the estimates that compiled on `target` at the default
    limit, modelled where the table has it, less the flagged ones (which the notes name)."""
    rows = default_limit(df[(df.source == "estimate") & (df.target == target) & (df.status == "ok")])
    # XLA at DEFAULT, the post's baseline; its variants (xla_highest) are in best-vs-XLA's table
    rows = rows[(rows.kernel == "xla") | is_pallas(rows.kernel)]
    rows, device = modelled(rows, "model_device_tflops")
    rows = rows[rows.tflops.notna() & (rows.hbm_bytes > 0)]
    notes = flagged_line(rows, lang)
    return rows[~flagged(rows)], device, notes


def roofline_published(df: pd.DataFrame, target: str) -> pd.DataFrame:
    """The post's published numbers on `target` with the HBM bytes of their grid and the chip's roofs."""
    post = df[(df.source == "published") & (df.target == target) & (df.status == "ok") & df.tflops.notna()]
    post = post[(post.kernel == "xla") | is_pallas(post.kernel)]
    traffic = default_limit(df[(df.source == "estimate") & (df.target == target) & (df.hbm_bytes > 0)])
    chip = ["hbm_bytes", "peak_tflops", "hbm_bytes_per_s"]
    traffic = traffic.drop_duplicates(MATCH)[MATCH + chip]
    placed = post.drop(columns=chip).reset_index().merge(traffic, on=MATCH).set_index("index")
    return placed.rename_axis(None)


def point_roofs(points: pd.DataFrame) -> pd.Series:
    """Each point's roof on the roofline: the lower of the HBM slope and the chip's compute peak."""
    slope = points.hbm_bytes_per_s.astype(float) / points.hbm_bytes.astype(float) / TERA
    return np.minimum(points.peak_tflops.astype(float), slope * flops(points.m, points.k, points.n))


def plot_search(df: pd.DataFrame, experiment: str, dtype: str, target: str, lang: str,
                narrow: bool = False):
    """Heatmaps over bm x bn of the best estimated TFLOP/s over bk, one panel per size."""
    rows = default_limit(df[(df.source == "estimate") & (df.experiment == experiment) & (df.dtype == dtype)
                            & (df.target == target) & (df.kernel != "xla")])
    rows, device = modelled(rows, "model_device_tflops")
    searched = rows[rows.search.eq(True)] if "search" in rows else rows.iloc[0:0]
    sizes = sorted(searched.m.unique())
    rows = rows[rows.m.isin(sizes)]
    panels = max(1, len(sizes))
    if narrow:
        fig, axes = plt.subplots(panels, 1, figsize=(NARROW_INCHES, 2.9 * panels + 1.0), squeeze=False)
        axes = axes.T  # axes[0]: the panels, as side by side
    else:
        fig, axes = plt.subplots(1, panels, figsize=(min(7.6, 0.8 + 2.4 * panels), 3.4), squeeze=False)
    unit = unit_name(dtype)
    fig.suptitle(text(lang, "title_search_modelled" if device else "title_search", experiment=experiment,
                      dtype=dtype, target=target, unit=unit), fontsize=10 if narrow else None)
    if not sizes:
        no_data(axes[0][0], lang)
        return fig
    bms = sorted(rows.bm.dropna().unique())
    bns = sorted(rows.bn.dropna().unique())
    vmax = rows.tflops.max()
    for ax, size in zip(axes[0], sizes, strict=True):
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
            label = "×" if bk is None else f"{grid[i, j]:.0f}\n{bk}"
            color = "black" if bk is None or grid[i, j] > 0.6 * vmax else "white"
            ax.text(j, i, label, ha="center", va="center", fontsize=9 if narrow else 8, color=color)
        ax.set_xticks(range(len(bns)), [str(int(b)) for b in bns])
        ax.tick_params(labelsize=9 if narrow else 8)  # 4-digit block sizes side by side
        ax.set_yticks(range(len(bms)), [str(int(b)) for b in bms])
        ax.set_xlabel(text(lang, "bn"))
        ax.set_ylabel(text(lang, "bm"))
        ax.set_title(text(lang, "size_panel", size=size), fontsize=10)
        ax.grid(False)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.5 if narrow else 0.8,
                 label=axis_label(lang, dtype, "device" if device else "estimate"))
    # What the marks mean: × and blank cells are otherwise unexplained.
    marks = text(lang, "search_legend_modelled" if device else "search_legend", unit=unit)
    fig.text(0.0, 0.0, wrap(marks, NARROW_NOTE_COLUMNS if narrow else 105), fontsize=NOTE_SIZE, ha="left",
             va="top")
    return fig


def plot_fidelity(df: pd.DataFrame, target: str, lang: str, narrow: bool = False, model=None):
    """The post's (or measured) TFLOP/s against libtpu's raw estimate and the held-out model, log-log,
    with y = x and fidelity.csv's scores of the same points."""
    # a panel draws the points its estimator has a number for (libtpu's raw estimate: XLA's only, where
    # no toolchain profiles the Pallas kernels)
    panels = [(other, estimator, points[points.y.notna()], score)
              for other, estimator, points, score in fidelity_panels(df, model, target)]
    panels = [panel for panel in panels if len(panel[2])]
    count = max(1, len(panels))
    if narrow:
        fig, axes = plt.subplots(count, 1, figsize=(NARROW_INCHES, 3.6 * count + 0.4), squeeze=False)
        axes = axes.T  # axes[0]: the panels, as side by side
    else:
        fig, axes = plt.subplots(1, count, figsize=(min(7.2, 3.8 * count), 4.2), squeeze=False, sharey=True)
    estimators = {estimator for _, estimator, _, _ in panels}
    fig.suptitle(text(lang, "title_fidelity_modelled" if "model" in estimators else "title_fidelity",
                      source=source_names(lang)["published"], target=target), fontsize=10 if narrow else None)
    if not panels:
        no_data(axes[0][0], lang)
        return fig
    lo = min(min(p.y.min(), p.ref_tflops.min()) for _, _, p, _ in panels) / 1.5
    hi = max(max(p.y.max(), p.ref_tflops.max()) for _, _, p, _ in panels) * 1.5
    experiments = sorted(set().union(*(set(p[p.kernel != "xla"].experiment) for _, _, p, _ in panels)))
    for ax, (other, estimator, points, score) in zip(axes[0], panels, strict=True):
        source = source_names(lang)[other]
        ax.set_title(text(lang, f"title_fidelity_{estimator}", source=source, target=target), fontsize=10)
        for experiment in experiments:
            group = points[(points.kernel != "xla") & (points.experiment == experiment)]
            ax.scatter(group.ref_tflops, group.y, s=18, label=experiment,
                       color=COLORS[experiments.index(experiment) % len(COLORS)])
        xla = points[points.kernel == "xla"]
        ax.scatter(xla.ref_tflops, xla.y, s=22, marker="D", color=XLA_COLOR, label=text(lang, "xla"))
        ax.plot([lo, hi], [lo, hi], color="#555555", linewidth=1, label=text(lang, "identity"))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel(text(lang, "reference_axis", source=source_names(lang)[other]))
        # a rank correlation only on MIN_RANK_POINTS points or more (summaries.MIN_RANK_POINTS)
        ranked = score["n"] >= MIN_RANK_POINTS and pd.notna(score["spearman"])
        # wrapped to the panel: a phone shows it at a third of the width
        ax.text(0.03, 0.97, wrap(text(lang, "agreement" if ranked else "agreement_few", n=score["n"],
                                      ratio=score["median_ratio"], spearman=score["spearman"],
                                      mal=score["median_abs_log_ratio"]), 26, indent=""),
                transform=ax.transAxes, va="top", fontsize=NOTE_SIZE)
        # each panel says which kind of number its y is: libtpu's estimate, or the timing model's
        ax.set_ylabel(text(lang, "fidelity_axis_model" if estimator == "model" else "fidelity_axis"))
    axes[0][-1].legend(fontsize=LEGEND_SIZE, loc="lower right")
    return fig


def generation_view(df: pd.DataFrame, experiment: str, dtype: str) -> tuple[pd.DataFrame, bool]:
    """(the rows a generations figure draws, whether modelled): the post's configurations that compiled."""
    # The post's own configurations on every target: the block search runs on some targets only, and a
    # best over it on one generation against the post's five blocks on another would not compare alike.
    rows = default_limit(post_configs(df[(df.source == "estimate") & (df.experiment == experiment)
                                         & (df.dtype == dtype) & (df.status == "ok")]))
    rows, device = modelled(rows, "model_device_tflops")
    return rows[rows.tflops.notna()], device


def best_points(pallas: pd.DataFrame) -> pd.DataFrame:
    """The row of the best configuration at each size (by its drawn TFLOP/s), sizes in order."""
    pallas = pallas[pallas.tflops.notna()]
    return pallas.loc[pallas.groupby("m").tflops.idxmax()].sort_values("m")


def plot_generations(df: pd.DataFrame, experiment: str, dtype: str, lang: str, narrow: bool = False):
    """The best estimated Pallas configuration and XLA per size, one colour per TPU generation."""
    rows, device = generation_view(df, experiment, dtype)
    notes = flagged_line(rows, lang)
    rows = rows[~flagged(rows)]
    # two to an A4 page in the report; narrow: the phone's variant, its legend in one column
    fig, ax = plt.subplots(figsize=(NARROW_INCHES, 4.6) if narrow else (6.4, 3.8))
    ax.set_title(text(lang, "title_generations_modelled" if device else "title_generations",
                      experiment=experiment, dtype=dtype))
    if rows.empty:
        no_data(ax, lang)
        return fig
    for target, group in sorted(rows.groupby("target"), key=lambda kv: generation_order(kv[0])):
        color = CHIPS[target].color if target in CHIPS else "#444444"
        xla = group[group.kernel == "xla"].sort_values("m")
        pallas = group[group.kernel != "xla"]
        best = best_points(pallas).set_index("m").tflops
        ax.plot(best.index, best.values, color=color, linestyle="--", marker="o", markersize=4,
                label=text(lang, "best_pallas", target=target))
        ax.plot(xla.m, xla.tflops, color=color, linestyle="--", marker="^", markersize=4, alpha=0.6,
                linewidth=1, label=text(lang, "xla_target", target=target))
    size_axis(ax, rows.m, lang)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(axis_label(lang, dtype, "device" if device else "estimate"))
    ax.legend(fontsize=LEGEND_SIZE, ncol=1 if narrow else 2)
    if notes:  # below the figure: saving with bbox_inches="tight" takes it in
        fig.text(0.01, -0.01, capped(notes, lang, NARROW_NOTE_COLUMNS if narrow else 100),
                 fontsize=NOTE_SIZE, va="top")
    return fig

