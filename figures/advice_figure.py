"""The advice figure of one layer shape: per target, the best blocks and those tied with them, with
their modelled device TFLOP/s and 80 %/95 % intervals, XLA beside them; `drawn_rows` picks the rows
once, so the drawing, caption, alt text and metadata say the same."""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from tpu_matmul_repro.analysis.views import tied  # noqa: E402
from tpu_matmul_repro.experiments.core.chips import POST_CHIP, chip  # noqa: E402
from tpu_matmul_repro.experiments.core.i18n import N_, translate  # noqa: E402
from tpu_matmul_repro.figures.cite import RESULTS_LICENCE, citation  # noqa: E402
from tpu_matmul_repro.figures.figure_specs import LANGUAGES, narrow_stem, stem  # noqa: E402
from tpu_matmul_repro.figures.labels import join, notes_after  # noqa: E402
from tpu_matmul_repro.figures.plots import NARROW_INCHES  # noqa: E402
from tpu_matmul_repro.figures.style import save, use_style  # noqa: E402

KIND = "advice"
BEST_COLOR, TIE_COLOR, XLA_COLOR = "#000000", "#0072B2", "#888888"
ROW_INCHES = 0.2  # per drawn block: its 8 pt label apart from the next
TEXT = {
    "title": N_("Blocks for %(shape)s (%(dtype)s, kernel %(kernel)s), modelled"),
    "panel": N_("%(target)s: %(ties)s tied with %(fastest)s; peak %(peak).0f TFLOP/s"),
    "axis": N_("TFLOP/s, modelled device time"),
    "best": N_("best blocks (#1)"),
    "tie": N_("tied with the fastest (inside its 80 %% interval)"),
    "xla": N_("XLA jnp.matmul"),
    "band80": N_("80 %% prediction interval"),
    "band95": N_("95 %% prediction interval"),
    "peak_line": N_("the chip's peak"),
    "caption": N_("The advisor's blocks for %(shape)s in %(dtype)s (kernel %(kernel)s) on %(targets)s: "
                  "the timing model's device TFLOP/s (dots) of the best blocks and of every block tied "
                  "with the fastest (the best blocks, or XLA where it is modelled faster) inside its 80 %% "
                  "interval (%(ties)s), with their 80 %% (thick) and "
                  "95 %% (thin) prediction intervals; modelled from libtpu %(libtpu)s's estimates, "
                  "without a TPU."),
    "ties_on": N_("%(n)s on %(target)s"),
    "xla_note": N_("grey: XLA's jnp.matmul through the same model"),
    "capped_note": N_("%(n)s of the intervals reach the chip's peak (dashed line) and end there"),
    "unchecked_note": N_("on %(targets)s the interval is v5e's, and no measurement checks it"),
    "alt": N_("Horizontal interval plots, one panel per target (%(targets)s): one row per block size "
              "(bm, bk, bn), ranked, the best first, then XLA; a dot at the modelled TFLOP/s, a thick bar "
              "for the 80 %% and a thin one for the 95 %% prediction interval, a dashed line at the "
              "chip's peak."),
    "sources": N_("modelled: libtpu %(libtpu)s's estimates for %(targets)s through the timing model fitted "
                  "on the post's v5e numbers, as device time, without a TPU"),
}


def _t(lang: str, key: str, **values) -> str:
    return translate(lang, TEXT[key], **values)


def fastest(rows: pd.DataFrame) -> str:
    """What the ties are tied with, by the advisor's rule: XLA where it is modelled faster, else #1."""
    xla = rows[rows.kernel == "xla"].model_device_tflops.dropna()
    best = rows[rows.kernel != "xla"].sort_values("rank").model_device_tflops
    return "XLA" if len(xla) and len(best) and xla.iloc[0] > best.iloc[0] else "#1"


def drawn_rows(advice: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """{target: the rows its panel draws}: the best and tied blocks in rank order, then XLA where
    modelled; a target with no ranked block has no panel."""
    out = {}
    for target in dict.fromkeys(advice.target):
        mine = advice[advice.target == target]
        ranked = mine[(mine.kernel != "xla") & mine["rank"].notna()].sort_values("rank")
        if ranked.empty:
            continue
        shown = ranked[(ranked["rank"] == ranked["rank"].min()) | tied(ranked)]
        xla = mine[(mine.kernel == "xla") & mine.model_device_tflops.notna()]
        out[target] = pd.concat([shown, xla])
    return out


def _peak(target: str, dtype: str) -> float:
    return chip(target).peak_flops[dtype] / 1e12


def _capped(rows: pd.DataFrame, peak: float) -> pd.Series:
    """Rows whose 95 % interval ends at the chip's peak (the advisor cuts it there: advise/model.py)."""
    return rows.model_device_tflops_hi95.fillna(rows.model_device_tflops_hi80) >= peak * (1 - 1e-6)


def _tint(color: str):
    """`color` halfway to white: the 80 % bar, under which the 95 % line and the dot stay visible."""
    return tuple(0.5 + 0.5 * c for c in to_rgb(color))


def _label(row) -> str:
    if row.kernel == "xla":
        return "XLA"
    return f"#{int(row['rank'])} ({int(row.bm)}, {int(row.bk)}, {int(row.bn)})"


def _versions(rows) -> str:
    return ", ".join(sorted({str(v) for v in rows.libtpu_version.dropna()})) or "?"


def _fields(advice: pd.DataFrame, shape: str, lang: str) -> dict:
    drawn = drawn_rows(advice)
    first = advice.iloc[0]
    every = pd.concat(drawn.values()) if drawn else advice.iloc[:0]
    m, k, n = shape.split("x")
    kernel = next((k for k in advice.kernel if k != "xla"), "?")
    return dict(shape=f"{m}×{k}×{n}", dtype=str(first["dtype"]), kernel=kernel,
                targets=join(lang, "list", drawn), libtpu=_versions(every), drawn=drawn)


def title(advice: pd.DataFrame, shape: str, lang: str) -> str:
    f = _fields(advice, shape, lang)
    return _t(lang, "title", shape=f["shape"], dtype=f["dtype"], kernel=f["kernel"])


def describe(advice: pd.DataFrame, shape: str, lang: str) -> dict:
    """Caption and alt text of the advice figure in `lang`, from drawn_rows, as catalog.describe gives."""
    f = _fields(advice, shape, lang)
    drawn = f["drawn"]
    ties = join(lang, "list", (_t(lang, "ties_on", n=int(tied(rows).sum()), target=target)
                               for target, rows in drawn.items()))
    caption = _t(lang, "caption", shape=f["shape"], dtype=f["dtype"], kernel=f["kernel"],
                 targets=f["targets"], ties=ties, libtpu=f["libtpu"])
    notes = []
    if any((rows.kernel == "xla").any() for rows in drawn.values()):
        notes.append(_t(lang, "xla_note"))
    capped = sum(int(_capped(rows, _peak(t, f["dtype"])).sum()) for t, rows in drawn.items())
    if capped:
        notes.append(_t(lang, "capped_note", n=capped))
    unchecked = [t for t in drawn if t != POST_CHIP]
    if unchecked:
        notes.append(_t(lang, "unchecked_note", targets=join(lang, "list", unchecked)))
    caption = notes_after(lang, caption, notes)
    return {"caption": caption, "alt": _t(lang, "alt", targets=f["targets"]),
            "sources": ["estimate"] if drawn else [], "kinds": ["modelled"] if drawn else []}


def draw(advice: pd.DataFrame, shape: str, lang: str = "en", narrow: bool = False):
    """The figure: one panel per target, stacked; the x axis reaches past the chip's peak, so an interval
    cut at the peak ends in view (`narrow`: the phone's variant)."""
    f = _fields(advice, shape, lang)
    drawn = f["drawn"]
    small = 9 if narrow else 8  # the labels and the legend; narrow: 9 px or more on a 390 px phone
    heights = [max(len(rows), 2) for rows in drawn.values()] or [2]
    # narrow: the legend's six rows in one column take about 0.9 in more
    size = (NARROW_INCHES if narrow else 6.4, 1.3 * len(heights) + ROW_INCHES * sum(heights) + 0.9 * narrow)
    fig, axes = plt.subplots(len(heights), 1, height_ratios=heights, squeeze=False, figsize=size)
    for ax, (target, rows) in zip(axes[:, 0], drawn.items(), strict=False):
        y = list(range(len(rows)))[::-1]
        best_rank, ties = rows["rank"].min(), tied(rows)
        colors = [XLA_COLOR if r.kernel == "xla" else TIE_COLOR if ties[i] and r["rank"] != best_rank
                  else BEST_COLOR for i, r in rows.iterrows()]
        tints = [_tint(c) for c in colors]
        for lo, hi, width, shade in (("lo95", "hi95", 1.2, colors), ("lo80", "hi80", 4.0, tints)):
            low, high = rows[f"model_device_tflops_{lo}"], rows[f"model_device_tflops_{hi}"]
            ax.hlines(y, low.fillna(rows.model_device_tflops), high.fillna(rows.model_device_tflops),
                      colors=shade, lw=width)
        ax.scatter(rows.model_device_tflops, y, s=18, c=colors, zorder=3, edgecolors="white",
                   linewidths=0.5)
        peak = _peak(target, f["dtype"])
        ax.axvline(peak, color="#555555", ls="--", lw=1)
        low = min(rows.model_device_tflops_lo95.fillna(rows.model_device_tflops).min(),
                  rows.model_device_tflops.min())
        high = max(peak, rows.model_device_tflops_hi95.fillna(rows.model_device_tflops).max())
        ax.set_xlim(low - 0.04 * (high - low), high + 0.04 * (high - low))
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_yticks(y, [_label(r) for _, r in rows.iterrows()], fontsize=small)
        ax.grid(axis="y", visible=False)
        ax.set_title(_t(lang, "panel", target=target, ties=int(tied(rows).sum()), fastest=fastest(rows),
                        peak=peak),
                     fontsize=10, loc="left")
    axes[-1, 0].set_xlabel(_t(lang, "axis"))
    handles = [Line2D([], [], color=BEST_COLOR, marker="o", ls="", label=_t(lang, "best")),
               Line2D([], [], color=TIE_COLOR, marker="o", ls="", label=_t(lang, "tie")),
               Line2D([], [], color=XLA_COLOR, marker="o", ls="", label=_t(lang, "xla")),
               Line2D([], [], color=_tint("#555555"), lw=4, label=_t(lang, "band80")),
               Line2D([], [], color="#555555", lw=1.2, label=_t(lang, "band95")),
               Line2D([], [], color="#555555", ls="--", lw=1, label=_t(lang, "peak_line"))]
    fig.legend(handles=handles, loc="outside lower center", ncols=1 if narrow else 2, fontsize=small)
    fig.suptitle(title(advice, shape, lang), fontsize=11)
    return fig


def provenance(advice: pd.DataFrame, shape: str, lang: str, commit: str) -> dict:
    """What the advice figure's files say about themselves, as catalog.provenance for the others."""
    info = describe(advice, shape, lang)
    f = _fields(advice, shape, lang)
    c = citation()
    return {"title": title(advice, shape, lang), "caption": info["caption"], "alt": info["alt"],
            "sources": _t(lang, "sources", libtpu=f["libtpu"], targets=f["targets"]),
            "toolchain": f"libtpu {f['libtpu']}", "commit": commit,
            "licence": f"{RESULTS_LICENCE}; credit: {c.title} v{c.version}",
            "post_url": c.post_url, "repository_url": c.repository or "", "author": c.authors,
            "figure": f"{KIND}_{shape}", "language": lang}


def render(advice: pd.DataFrame, shape: str, directory, commit: str) -> list[Path]:
    """The advice figure of `shape` in every language and format into `directory`; returns the paths."""
    paths = []
    for lang in LANGUAGES:
        use_style(lang)
        fig = draw(advice, shape, lang)
        info = provenance(advice, shape, lang, commit)
        paths += save(fig, stem(directory, shape, lang), info)
        paths += save(draw(advice, shape, lang, narrow=True), narrow_stem(directory, shape, lang), info,
                      formats=("png",))  # the phone's variant (specs.NARROW_KINDS)
    return paths
