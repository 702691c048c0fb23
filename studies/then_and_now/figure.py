"""Then and now: VMEM each of the post's configurations needs under each toolchain, against the limit;
one bar per toolchain where some toolchain disagrees with the post, on a linear axis from 0.
"""
import re

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.patches import Patch

from tpu_matmul_repro.analysis.toolchain_rows import toolchains_of
from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.experiments.core.i18n import N_, translate
from tpu_matmul_repro.experiments.core.units import MiB
from tpu_matmul_repro.figures.catalog import Entry, register
from tpu_matmul_repro.figures.plots import NARROW_INCHES, wrap
from tpu_matmul_repro.report.tables import toolchain_name
from tpu_matmul_repro.studies.then_and_now.analysis import disagrees, then_and_now
from tpu_matmul_repro.studies.toolchains import config_name

TEXT = {  # English, marked for extraction; the translations are in locale/ (experiments/core/i18n.py)
    "title": N_("VMEM needed by the post's configurations, then and now (%(target)s)"),
    "toolchain": N_("%(name)s: jax %(jax)s, libtpu %(libtpu)s"),
    "none_drawn": N_("%(name)s: jax %(jax)s, libtpu %(libtpu)s (no bar: not compiled in this run)"),
    "oom": N_("hatched: out of VMEM (what the compiler requests)"),
    "disagree": N_("vermilion edge: disagrees with the post"),
    "limit": N_("default scoped limit %(limit).0f MiB"),
    "axis": N_("VMEM (MiB)"),
    "verdict": {"ok": N_("post: ok"), "failed": N_("post: ✗")},
    "missing": N_("%(name)s: no results (%(reason)s)"),
    "no_data": N_("no estimates of the post's configurations"),
    # "no toolchain differs", not "every toolchain agrees": a toolchain may not have compiled them all
    "agreed": N_("not drawn: the %(n)s other configurations, on which no toolchain differs from the post"),
    "all_agree": N_("no toolchain differs from the post on any of the %(n)s configurations"),
}
NEAR_LIMIT = 0.05  # a bar this close to the limit (a fraction of it) is labelled with its MiB
COLORS = ["#E69F00", "#009E73", "#CC79A7", "#0072B2"]  # older toolchains first; the pipeline's last (blue)


def verdict(status: str, lang: str) -> str:
    return translate(lang, TEXT["verdict"][status]) if status in TEXT["verdict"] else status


def label(row) -> str:
    return config_name(row.experiment, row.kernel, row.dtype, row.m, row.bm, row.bk, row.bn)


def plot_then_and_now(df: pd.DataFrame, lang: str, primary: str | None = None, target: str = POST_CHIP,
                      narrow: bool = False):
    """The figure (`narrow`: the phone's variant, NARROW_INCHES wide: each row's verdict on a line of its
    own under its configuration, the legend in one column, the titles wrapped)."""
    def t(key, **values):
        return translate(lang, TEXT[key], **values)

    table = then_and_now(df, primary)
    names = toolchains_of(df, primary)
    # the configurations some toolchain disagrees on, large; the others counted in one line
    differ = table[[any(disagrees(getattr(r, f"{n}_agrees")) for n in names) for r in table.itertuples()]]
    agreed = len(table) - len(differ)
    table = differ.reset_index(drop=True) if len(differ) else table.iloc[0:0]
    names_shown = len(toolchains_of(df, primary))
    if narrow:  # the legend's keys one per line under the bars
        size = (NARROW_INCHES, 0.62 * max(len(table), 3) + 1.6 + 0.22 * (names_shown + 3))
    else:
        size = (6.4, 0.42 * max(len(table), 3) + 1.9)
    fig, ax = plt.subplots(figsize=size)
    fig.suptitle(wrap(t("title", target=target), 44, indent="") if narrow else t("title", target=target),
                 fontsize=10)
    if table.empty or not names:
        message = t("all_agree", n=agreed) if names and agreed else t("no_data")
        ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    est = df[(df.source == "estimate") & (df.target == target)]
    limits = est.vmem_limit_bytes[~est.raised_limit.eq(True)].dropna()
    limit = limits.iloc[0] / MiB if len(limits) else None
    height = 0.8 / len(names)
    handles, notes = [], []
    for i, name in enumerate(names):
        color = COLORS[-1] if name == primary else COLORS[i % (len(COLORS) - 1)]
        rows = est[est.toolchain == name]
        first = rows.iloc[0]
        shown = toolchain_name(name, lambda m: translate(lang, m), standalone=True).capitalize()
        errors = table[f"{name}_error"].fillna("")
        drawn = [(row.Index, getattr(row, f"{name}_vmem_bytes")) for row in table.itertuples()
                 if getattr(row, f"{name}_status") in ("ok", "vmem_oom")
                 and not pd.isna(getattr(row, f"{name}_vmem_bytes"))]
        # a key with no bar says why, so a reader does not look for it
        handles.append(Patch(color=color, label=t("toolchain" if drawn else "none_drawn", name=shown,
                                                   jax=first.jax_version, libtpu=first.libtpu_version)))
        if (table[f"{name}_status"] == "toolchain_error").all():
            notes.append(t("missing", name=shown, reason=str(errors.iloc[0]).splitlines()[0][:90]))
        for y, row in enumerate(table.itertuples()):
            status, vmem = getattr(row, f"{name}_status"), getattr(row, f"{name}_vmem_bytes")
            if status not in ("ok", "vmem_oom") or pd.isna(vmem):
                continue
            agrees = getattr(row, f"{name}_agrees")
            ax.barh(y + (i - (len(names) - 1) / 2) * height, vmem / MiB, height=height * 0.95, color=color,
                    hatch="////" if status == "vmem_oom" else None, alpha=0.9 if status == "ok" else 0.55,
                    edgecolor="#D55E00" if disagrees(agrees) else color,
                    linewidth=1.2 if disagrees(agrees) else 0.3)
            at = (vmem / MiB, y + (i - (len(names) - 1) / 2) * height)
            near = limit is not None and abs(vmem / MiB - limit) < NEAR_LIMIT * limit
            if errors.iloc[y].startswith("not compiled") or near:
                # a bar within a few % of the limit looks equal to it: its value says on which side it ends
                mark = ("≥" if errors.iloc[y].startswith("not compiled") else "") + (
                    f"{vmem / MiB:.2f}" if near else "")
                ax.annotate(mark, at, xytext=(3, 0), textcoords="offset points", va="center", fontsize=7)
    if limit is not None:
        ax.axvline(limit, color="#D55E00", linewidth=1)
        handles.append(plt.Line2D([], [], color="#D55E00", label=t("limit", limit=limit)))
    handles += [Patch(facecolor="white", edgecolor="#444444", hatch="////", label=t("oom")),
                Patch(facecolor="white", edgecolor="#D55E00", linewidth=1.2, label=t("disagree"))]
    ax.set_yticks(range(len(table)))
    ax.set_yticklabels([f"{label(r)}{chr(10) if narrow else '  '}[{verdict(r.published_status, lang)}]"
                        for r in table.itertuples()], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlim(left=0)  # linear from 0: a bar twice as long needs twice the VMEM
    ax.set_xlabel(t("axis"))
    ax.grid(axis="x", alpha=0.3)
    fig.legend(handles=handles, loc="outside lower center", ncol=1 if narrow else 2, fontsize=8.5)
    # above the bars: the configurations not drawn (under them the legend, which a note would overprint)
    agreed_text = t("agreed", n=agreed)
    if narrow:  # a line break after the first colon or comma, then wrapped: never a lone character
        agreed_text = "\n".join(wrap(line, 48, indent="") for line in
                                 re.sub(r"([:：，,])\s*", "\\1\n", agreed_text, count=1).splitlines())
    ax.set_title(agreed_text, fontsize=8.5, color="#333333")
    for j, note in enumerate(notes[:3]):
        fig.text(0.01, -0.02 - 0.035 * j, note, fontsize=8.5, color="#D55E00")
    return fig


register("then_and_now", Entry(
    plot_then_and_now,
    caption=N_("VMEM that the post's configurations need on %(target)s under each toolchain of the config, "
               "one per era (the post's, then newer ones up to today's), against the default scoped-VMEM "
               "limit: the configurations on which a toolchain disagrees with the post, drawn; the others, "
               "on which every toolchain agrees, counted above the bars; estimated by each toolchain's "
               "libtpu without a TPU."),
    alt=N_("Horizontal bars, one row per configuration of the post on which some toolchain disagrees with "
           "the post's verdict, one bar per toolchain: filled where it compiles at the default limit, "
           "hatched where it runs out of VMEM, edged in vermilion where it disagrees, on a linear axis from "
           "0; a line marks the default limit; a line of text above the bars counts the configurations not "
           "drawn."),
    every_toolchain=True,
))
