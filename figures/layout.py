"""A figure's layout checked from Matplotlib's extents after a draw: no text over another text or a
legend, no text off the canvas or out of its panel, no point outside its axes; `problems(fig)`
names each breach in a line (docs/outputs.md)."""
import io
from itertools import combinations

import numpy as np
from matplotlib.collections import PathCollection
from matplotlib.text import Text
from matplotlib.transforms import Bbox

# Window extents are in pixels at the figure's dpi; overlaps and overhangs under this are rounding.
TOLERANCE_PX = 1.5


def _visible(artist) -> bool:
    return artist.get_visible() and (not isinstance(artist, Text) or artist.get_text().strip() != "")


def _texts(fig):
    """(name, text artist, its axes or None where it belongs to the figure) of every visible text."""
    out = []
    if fig._suptitle is not None:
        out.append(("suptitle", fig._suptitle, None))
    out += [("figure text", t, None) for t in fig.texts if t is not fig._suptitle]
    for i, ax in enumerate(fig.axes):
        for title in (ax.title, ax._left_title, ax._right_title):
            out.append((f"axes {i} title", title, None))
        if ax.axison:
            out.append((f"axes {i} x label", ax.xaxis.label, None))
            out.append((f"axes {i} y label", ax.yaxis.label, None))
            for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
                for tick in axis._update_ticks():  # the ticks drawn: inside the view limits
                    out += [(f"axes {i} {which} tick", label, None) for label in (tick.label1, tick.label2)
                            if label.get_visible()]
        for t in ax.texts:  # notes, annotations, heatmap cells: placed inside the panel
            coords = getattr(t, "xycoords", None)
            coords = coords if isinstance(coords, tuple) else (coords, coords)
            inside = t.get_transform() in (ax.transAxes, ax.transData) or all(
                c in ("data", "axes fraction") for c in coords)
            out.append((f"axes {i} text", t, ax if inside else None))
    return [(n, t, ax) for n, t, ax in out if _visible(t)]


def _legends(fig):
    """(name, legend, its axes or None) of every visible legend."""
    legends = [("figure legend", lg, None) for lg in fig.legends]
    legends += [(f"axes {i} legend", ax.get_legend(), ax) for i, ax in enumerate(fig.axes) if ax.get_legend()]
    return [(n, lg, ax) for n, lg, ax in legends if lg.get_visible()]


def _overlap(a: Bbox, b: Bbox) -> bool:
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > TOLERANCE_PX
            and min(a.y1, b.y1) - max(a.y0, b.y0) > TOLERANCE_PX)


def _inside(inner: Bbox, outer: Bbox) -> bool:
    return (inner.x0 >= outer.x0 - TOLERANCE_PX and inner.x1 <= outer.x1 + TOLERANCE_PX
            and inner.y0 >= outer.y0 - TOLERANCE_PX and inner.y1 <= outer.y1 + TOLERANCE_PX)


def _short(text: Text) -> str:
    words = " ".join(text.get_text().split())
    return repr(words if len(words) <= 40 else words[:37] + "...")


def _points(ax):
    """(what, display coordinates) of every marker drawn in `ax`."""
    for line in ax.lines:
        if not _visible(line) or line.get_marker() in (None, "", "none", "None", " "):
            continue
        xy = np.asarray(line.get_xydata(), dtype=float)
        yield f"a {line.get_label() or 'line'} marker", line.get_transform().transform(xy)
    for collection in ax.collections:
        if isinstance(collection, PathCollection) and _visible(collection) and len(collection.get_offsets()):
            offsets = np.asarray(collection.get_offsets(), dtype=float)
            xy = collection.get_offset_transform().transform(offsets)
            yield f"a {collection.get_label() or 'scatter'} point", xy


def problems(fig) -> list[str]:
    """Every breach of the three rules in `fig` as style.save writes it (laid out once and fixed: draw a
    checked figure no further), read in the draw of that saved PNG."""
    import matplotlib.pyplot as plt

    from tpu_matmul_repro.figures.style import NO_LAYOUT, lay_out

    found = []

    def check(event):
        found[:] = _problems(fig, event.renderer, fig.bbox)

    with plt.rc_context(NO_LAYOUT):
        bbox = lay_out(fig)
        callback = fig.canvas.mpl_connect("draw_event", check)
        try:
            fig.savefig(io.BytesIO(), format="png", bbox_inches=bbox)
        finally:
            fig.canvas.mpl_disconnect(callback)
    return found


def _problems(fig, renderer, canvas: Bbox) -> list[str]:
    texts = [(name, t, ax, t.get_window_extent(renderer)) for name, t, ax in _texts(fig)]
    legends = [(name, lg.get_window_extent(renderer), ax) for name, lg, ax in _legends(fig)]
    found = []
    for name, box, ax in legends:  # a panel's legend in that panel (wider, it pushes the plot aside)
        if ax is not None and not _inside(box, ax.get_window_extent(renderer)):
            found.append(f"the {name} leaves its panel")
    for name, t, ax, box in texts:
        if not _inside(box, canvas):
            found.append(f"{name} {_short(t)} leaves the canvas")
        if ax is not None and not _inside(box, ax.get_window_extent(renderer)):
            found.append(f"{name} {_short(t)} leaves its panel")
        for legend_name, legend_box, _ in legends:
            if _overlap(box, legend_box):
                found.append(f"{name} {_short(t)} overlaps the {legend_name}")
    for (n1, t1, _, b1), (n2, t2, _, b2) in combinations(texts, 2):
        if _overlap(b1, b2):
            found.append(f"{n1} {_short(t1)} overlaps {n2} {_short(t2)}")
    for (n1, b1, _), (n2, b2, _) in combinations(legends, 2):
        if _overlap(b1, b2):
            found.append(f"the {n1} overlaps the {n2}")
    for i, ax in enumerate(fig.axes):
        frame = ax.get_window_extent(renderer)
        for what, xy in _points(ax):
            xy = xy[np.isfinite(xy).all(axis=1)]
            outside = ~((xy[:, 0] >= frame.x0 - TOLERANCE_PX) & (xy[:, 0] <= frame.x1 + TOLERANCE_PX)
                        & (xy[:, 1] >= frame.y0 - TOLERANCE_PX) & (xy[:, 1] <= frame.y1 + TOLERANCE_PX))
            if outside.any():
                found.append(f"axes {i}: {int(outside.sum())} of {what} outside the axes")
    return found


def smallest_font_px(fig, width_px: int) -> float:
    """The smallest text on the figure, in pixels, once the saved canvas is shown `width_px` wide."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width_in = fig.get_tightbbox(renderer).padded(0.08).width
    sizes = [t.get_fontsize() for _, t, _ in _texts(fig)]
    return min(sizes) / 72 * width_px / width_in if sizes else float("inf")
