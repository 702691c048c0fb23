"""The history figure: VMEM each changed configuration of the post needs, release by release; only
probed releases carry a point, with the default limit and the first changing release marked.
"""
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D
from packaging.version import Version

from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.experiments.core.i18n import N_, NC_, translate
from tpu_matmul_repro.experiments.core.units import MiB
from tpu_matmul_repro.figures.cite import RESULTS_LICENCE, citation
from tpu_matmul_repro.studies.history.releases import Release

TEXT = {  # English, marked for extraction; the translations are in locale/ (experiments/core/i18n.py)
    "title": N_("VMEM the post's changed configurations need, release by release\n(%(target)s, estimated "
                "by each release's libtpu at the default scoped limit, no TPU used)"),
    "axis": NC_("history figure", "VMEM (MiB)"),  # the core figures' has no full-width brackets
    "release": N_("jax release (libtpu of its [tpu] extra), oldest first"),
    "ok": NC_("history figure", "fits the default limit"),
    "oom": N_("out of VMEM (what the compiler requests)"),
    "limit": N_("default scoped limit %(limit).0f MiB"),
    "changed": N_("first release changed: jax %(jax)s, libtpu %(libtpu)s"),
    "change": N_("%(before)s → %(after)s MiB (%(delta)+.0f KiB)"),
    "sizes": N_("%(config)s at %(sizes)s"),
    "unprobed": N_("grey releases were not probed by the bisection: no point, nothing interpolated"),
    "failed": N_("✗ %(release)s: no VMEM figure (%(status)s)"),
    "no_data": N_("no configuration changed between the endpoints"),
    "caption": N_("VMEM that each of the post's configurations whose figure differs between the post's "
                  "toolchain and today's needs on %(target)s, per jax release (with the libtpu its [tpu] "
                  "extra pins), at the releases the bisection probed (%(probed)s of %(releases)s); "
                  "estimated by each release's libtpu without a TPU."),
    "alt": N_("Small multiples, one panel per group of configurations with the same figures: VMEM in MiB "
              "against the jax release (x axis, %(releases)s releases from jax %(first)s to %(last)s); "
              "points only at the %(probed)s probed releases, dots where it fits and × where it runs out "
              "of VMEM, a dashed line at the default limit and a vertical line at the first release that "
              "changed it."),
    "sources": N_("estimated by libtpu %(libtpus)s (one environment per jax release, deviceless compiles "
                  "for %(target)s); release list from the jax wheels' [tpu] extras "
                  "(studies/history/data/releases.csv)"),
}
OK_COLOR, OOM_COLOR, LIMIT_COLOR = "#0072B2", "#D55E00", "#D55E00"
CHANGE_COLORS = ["#009E73", "#CC79A7", "#E69F00", "#56B4E9"]  # one per release that changed a figure


def groups(vmem: pd.DataFrame) -> list[pd.DataFrame]:
    """The configurations, grouped where every probed release gives them the same status and bytes."""
    by_figures: dict[tuple, list[str]] = {}
    for name, rows in vmem.groupby("label", sort=False):
        key = tuple(zip(rows.release_index, rows.status, rows.vmem_bytes.fillna(-1), strict=True))
        by_figures.setdefault(key, []).append(name)
    return [vmem[vmem.label.isin(names)] for names in by_figures.values()]


def panel_title(names: list[str], lang: str) -> str:
    """"v4 (512, 1024, 1024) at 2048, 4096, 8192" for labels that differ only in their size."""
    configs = list(dict.fromkeys(name.rsplit(", ", 1)[0] for name in names))
    if len(configs) > 1:
        return "; ".join(names)
    sizes = ", ".join(n.rsplit(", ", 1)[1] for n in names)
    return translate(lang, TEXT["sizes"], config=configs[0], sizes=sizes)


def mib(value: float) -> str:
    """Enough decimals to tell apart figures a few KiB apart."""
    return f"{value / MiB:.3f}".rstrip("0").rstrip(".")


def plot_history(vmem: pd.DataFrame, first_change: pd.DataFrame, releases: list[Release], lang: str):
    def t(key, **values):
        return translate(lang, TEXT[key], **values)

    panels = groups(vmem) if len(vmem) else []
    fig, axes = plt.subplots(max(len(panels), 1), 1, sharex=True, squeeze=False,
                             figsize=(8, 1.5 * max(len(panels), 1) + 2.2))
    axes = axes[:, 0]
    fig.suptitle(t("title", target=POST_CHIP), fontsize=9)
    if not panels:
        axes[0].text(0.5, 0.5, t("no_data"), ha="center", va="center", transform=axes[0].transAxes)
        axes[0].set_axis_off()
        return fig
    probed = set(vmem.release_index)
    notes = []
    changed_in = list(dict.fromkeys(first_change.first_changed_jax.dropna().astype(str)))
    colors = {jax: CHANGE_COLORS[i % len(CHANGE_COLORS)] for i, jax in enumerate(changed_in)}
    for ax, rows in zip(axes, panels, strict=True):
        names = list(dict.fromkeys(rows.label))
        one = rows[rows.label == names[0]].sort_values("release_index")
        fits, oom = one[one.status == "ok"], one[one.status == "vmem_oom"]
        ax.plot(fits.release_index, fits.vmem_bytes / MiB, "o", color=OK_COLOR, markersize=5)
        ax.plot(oom.release_index, oom.vmem_bytes / MiB, "x", color=OOM_COLOR, markersize=6, mew=1.5)
        for row in one[~one.status.isin(["ok", "vmem_oom"])].itertuples():
            notes.append(t("failed", release=f"jax {row.jax}", status=row.status))
        limit = one.vmem_limit_bytes.dropna()
        if len(limit):
            ax.axhline(limit.iloc[0] / MiB, color=LIMIT_COLOR, linestyle="--", linewidth=0.9)
        change = first_change[first_change.label == names[0]]
        if len(change) and pd.notna(change.first_changed_jax.iloc[0]):
            row = change.iloc[0]
            x = next(i for i, r in enumerate(releases) if r.jax == str(row.first_changed_jax))
            color = colors[str(row.first_changed_jax)]
            ax.axvline(x - 0.5, color=color, linewidth=1.2)
            before = one[one.release_index < x].vmem_bytes.dropna()
            if len(before):
                ax.text(x - 0.3, 0.06, t(
                    "change", before=mib(before.iloc[-1]), after=mib(row.first_changed_vmem_bytes),
                    delta=(row.first_changed_vmem_bytes - before.iloc[-1]) / 1024),
                    transform=ax.get_xaxis_transform(), fontsize=6.5, color=color)
        ax.set_title(panel_title(names, lang), fontsize=7, loc="left")
        ax.set_ylabel(t("axis"), fontsize=7)
        high = max(one.vmem_bytes.max() / MiB, limit.iloc[0] / MiB if len(limit) else 0)
        ax.set_ylim(0, high * 1.25 if high > 0 else 1)
        ax.grid(axis="y", alpha=0.3)
    axes[-1].set_xticks(range(len(releases)))
    axes[-1].set_xticklabels([f"{r.jax} ({r.libtpu or '–'})" for r in releases], rotation=70, ha="right",
                             fontsize=6)
    for i, tick in enumerate(axes[-1].get_xticklabels()):
        tick.set_color("black" if i in probed else "#999999")
    axes[-1].set_xlim(-0.6, len(releases) - 0.4)
    axes[-1].set_xlabel("\n".join([t("release"), t("unprobed"), *dict.fromkeys(notes)]), fontsize=7)
    handles = [Line2D([], [], marker="o", linestyle="", color=OK_COLOR, label=t("ok")),
               Line2D([], [], marker="x", linestyle="", color=OOM_COLOR, mew=1.5, label=t("oom"))]
    limits = vmem.vmem_limit_bytes.dropna()
    if len(limits):
        handles.append(Line2D([], [], color=LIMIT_COLOR, linestyle="--",
                              label=t("limit", limit=limits.iloc[0] / MiB)))
    for row in first_change.drop_duplicates(["first_changed_jax"]).itertuples():
        if pd.notna(row.first_changed_jax):
            handles.append(Line2D([], [], color=colors[str(row.first_changed_jax)],
                                  label=t("changed", jax=row.first_changed_jax,
                                          libtpu=row.first_changed_libtpu)))
    fig.legend(handles=handles, loc="outside lower center", ncol=2, fontsize=7)
    return fig


def versions(column: pd.Series) -> list[str]:
    """The distinct versions of a column, oldest first (0.0.5 before 0.0.10)."""
    return sorted(set(column.dropna().astype(str)), key=Version)


def provenance(vmem: pd.DataFrame, releases: list[Release], lang: str, title: str) -> dict:
    """What the figure's files say about themselves (the fields figures/style.py embeds)."""
    c = citation()

    def t(key, **values):
        return translate(lang, TEXT[key], **values)

    fields = dict(target=POST_CHIP, probed=vmem.release_index.nunique() if len(vmem) else 0,
                  releases=len(releases), first=releases[0].jax, last=releases[-1].jax,
                  libtpus=", ".join(versions(vmem.installed_libtpu)) if len(vmem) else "–")
    jaxes = versions(vmem.installed_jax) if len(vmem) else []
    return {
        "title": title, "caption": t("caption", **fields), "alt": t("alt", **fields),
        "sources": t("sources", **fields),
        "toolchain": f"jax {', '.join(jaxes)}; libtpu {fields['libtpus']}" if jaxes else "–",
        "commit": ", ".join(sorted(set(vmem.git_sha.dropna().astype(str)))) if len(vmem) else "unknown",
        "licence": f"{RESULTS_LICENCE}; credit: {c.title} v{c.version}",
        "post_url": c.post_url, "repository_url": c.repository or "",
        "author": c.authors, "figure": "history_vmem", "language": lang,
    }
