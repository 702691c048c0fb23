"""How to draw each kind of figure (an `Entry`: its drawing function, caption and alt-text templates)
and what each one is, in every language, with the provenance embedded in its files; a study adds
its kinds with `register` (docs/development.md, "A figure")."""
import dataclasses
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from tpu_matmul_repro.analysis import views
from tpu_matmul_repro.analysis.number_classes import number_class
from tpu_matmul_repro.analysis.runs import latest_runs
from tpu_matmul_repro.analysis.summaries import post_configs
from tpu_matmul_repro.analysis.toolchain_rows import primary_rows
from tpu_matmul_repro.experiments.core.i18n import N_, translate, translations
from tpu_matmul_repro.experiments.core.units import unit_name
from tpu_matmul_repro.figures import plots
from tpu_matmul_repro.figures.cite import RESULTS_LICENCE, citation, post_attribution
from tpu_matmul_repro.figures.figure_specs import LANGUAGES, NARROW_KINDS, narrow_stem, stem
from tpu_matmul_repro.figures.labels import (
    JOINS,
    experiment_description,
    join,
    notes_after,
    source_names,
    text,
)
from tpu_matmul_repro.figures.style import save, use_style


@dataclasses.dataclass(frozen=True)
class Entry:
    """One kind of figure. Caption and alt templates may use the figure's arguments and the fields
    `describe` derives from the table (sources, libtpu, unit, sizes, size_list, description, ...)."""

    draw: Callable
    caption: str  # English, marked for extraction (N_); translated and filled by `describe`
    alt: str
    # Drawn from every toolchain's estimates; the others each target's own compiler's (primary_rows).
    every_toolchain: bool = False
    uses_model: bool = False  # its drawing function takes the run's fits (model=, a FittedModel)


CATALOG = {
    "experiment": Entry(
        plots.plot_experiment,
        caption=N_("Throughput of the post's %(experiment)s configurations (%(description)s) in %(dtype)s "
                   "on TPU %(target)s against matrix size, next to XLA's jnp.matmul; %(sources)s."),
        alt=N_("Line chart of %(unit)s (y axis) against matrix size M = K = N, %(sizes)s (x axis, log "
               "scale), %(n_series)s series: the configurations of %(experiment)s %(dtype)s on %(target)s "
               "and XLA's jnp.matmul; %(sources)s. A configuration that fails is a × at zero, its reason "
               "written under the plot."),
    ),
    "vmem": Entry(
        plots.plot_vmem,
        caption=N_("VMEM that each of the post's configurations uses on %(target)s (or requests, where it "
                   "does not fit), against the default scoped-VMEM limit; estimated by libtpu %(libtpu)s's "
                   "compiler without a TPU."),
        alt=N_("Small multiples, one panel per experiment and data type: VMEM in MiB (log scale) against "
               "matrix size, one dashed line per configuration; dots fit the default limit, × marks run "
               "out of VMEM, hollow squares fit a raised limit; a dash-dot line marks the default limit."),
    ),
    "roofline": Entry(
        plots.plot_roofline,
        caption=N_("Roofline on %(target)s: the throughput of every configuration that compiles, against "
                   "its arithmetic intensity (FLOPs per byte moved between HBM and VMEM), under the compute "
                   "peak and the HBM bandwidth; %(sources)s."),
        alt=N_("Log-log scatter plots, one panel per data type (int8 in TOP/s): throughput (%(numbers)s) "
               "against arithmetic intensity, hollow markers of one colour and shape per experiment, black "
               "diamonds for XLA, filled markers for the post's published numbers, under the roof set by "
               "the compute peak and the HBM bandwidth (in float32, XLA's roof and the Pallas kernels' "
               "apart)."),
    ),
    "search": Entry(
        plots.plot_search,
        caption=N_("Block-size search of %(experiment)s in %(dtype)s on %(target)s: for each (bm, bn) and "
                   "matrix size, the best %(unit)s over bk; %(sources)s."),
        alt=N_("Heatmaps, one per matrix size (%(size_list)s), bm on the y axis and bn on the x axis; each "
               "cell gives the best %(unit)s (%(numbers)s) and its bk; × marks cells where every bk runs out "
               "of VMEM, blank cells have no configuration (neither the post's nor the search's)."),
    ),
    "fidelity": Entry(
        plots.plot_fidelity, uses_model=True,
        caption=N_("libtpu's raw estimate and the timing model out of sample (each of the post's figures "
                   "predicted by a fit that left it out) against %(others)s on %(target)s: the points "
                   "results/fidelity.csv scores at sizes from 2048 up (one per configuration in each of "
                   "the post's figures, so XLA's baseline once per figure), log-log with the line y = x."),
        alt=N_("Log-log scatter plots, one panel per estimator: its TFLOP/s (y) against %(others)s TFLOP/s "
               "(x), one colour per experiment and black diamonds for XLA, with the diagonal y = x; the "
               "number of points, the median ratio, the median absolute log ratio and (from 5 points up) "
               "the Spearman correlation are written in the corner."),
    ),
    "generations": Entry(
        plots.plot_generations,
        caption=N_("%(experiment)s in %(dtype)s across TPU generations (%(targets)s): the best of the "
                   "post's own Pallas configurations at each size (the same ones on every generation; the "
                   "block search runs on some targets only) and XLA's jnp.matmul; %(sources)s."),
        alt=N_("Line chart: %(unit)s (%(numbers)s) against matrix size (%(sizes)s), one colour per TPU "
               "generation; circles on dashed lines for the best Pallas configuration, triangles for XLA."),
    ),
}


def register(kind: str, entry: Entry) -> None:
    """Add a study's kind of figure (its figure.py does, when loaded: experiments/plan/studies.py)."""
    if CATALOG.get(kind, entry) != entry:
        raise ValueError(f"figure kind={kind!r} is registered twice, differently")
    CATALOG[kind] = entry



def figure_rows(df: pd.DataFrame, kind: str, args: dict) -> pd.DataFrame:
    """The rows a figure draws from: its target's (or all), experiment's and data type's."""
    rows = df[df.target == args["target"]] if "target" in args else df[df.source == "estimate"]
    if kind == "experiment":
        mine = rows[(rows.experiment == args["experiment"]) & (rows.dtype == args["dtype"])]
        xla = rows[(rows.kernel == "xla") & (rows.dtype == args["dtype"])]
        # the same row can be in both; by index, as measured rows hold lists of samples (unhashable)
        both = pd.concat([mine, xla])
        return both[~both.index.duplicated()]
    if kind in ("search", "generations"):
        rows = rows[(rows.source == "estimate") & (rows.experiment == args["experiment"])
                    & (rows.dtype == args["dtype"])]
    elif kind == "vmem":
        rows = rows[rows.source == "estimate"]
    elif kind == "roofline":  # the post's published points beside the estimates
        rows = rows[rows.source.isin(["estimate", "published"])]
    return rows


# The timing model's column a kind draws in place of libtpu's estimate, where the table has it.
MODEL_COLUMNS = {"experiment": "model_post_tflops", "roofline": "model_device_tflops",
                 "search": "model_device_tflops", "generations": "model_device_tflops"}


def model_column(rows: pd.DataFrame, kind: str) -> str | None:
    """"post" or "device" where a figure of `kind` draws the timing model's numbers, else None."""
    column = MODEL_COLUMNS.get(kind)
    if column is None or column not in rows or not rows[rows.source == "estimate"][column].notna().any():
        return None
    return "post" if column == "model_post_tflops" else "device"


def kinds_of(rows: pd.DataFrame, kind: str) -> list[str]:
    """The four classes of number a figure shows: estimated, modelled, measured, published."""
    present = set(rows.source) if len(rows) else set()
    if kind == "fidelity":  # libtpu's raw estimate in one panel, the timing model in the other
        modelled = "model_post_tflops" in rows and rows.model_post_tflops.notna().any()
        out = (["estimate"] + (["modelled"] if modelled else [])) if "estimate" in present else []
        return out + [s for s in ("measured", "published") if s in present]
    through_model = model_column(rows, kind) is not None
    out = [number_class("estimate", through_model)] if "estimate" in present else []
    return out + [s for s in ("measured", "published") if s in present]


def kinds_label(kinds: list[str], lang: str) -> str:
    """The classes named, in `lang` ("modelled, published")."""
    return join(lang, "list", (source_names(lang)[k] for k in kinds))


def sources_sentence(rows: pd.DataFrame, lang: str, kind: str = "") -> str:
    """How each kind of number in the figure was obtained, with the line style it is drawn in."""
    parts = []
    for source, part, first in plots.present_sources(rows, ("estimate", "measured", "published")):
        if source == "estimate":
            key = {"post": "caption_modelled", "device": "caption_modelled_device"}.get(
                model_column(rows, kind), "caption_estimate")
            parts.append(text(lang, key, libtpu=", ".join(views.versions(part, "libtpu_version")) or "?",
                              target=join(lang, "list", views.versions(part, "target"))))
        elif source == "measured":
            parts.append(text(lang, "caption_measured", device_kind=first.device_kind))
        else:  # the roofline fills the post's points (its own hollow markers are the run's)
            key = "caption_published_filled" if kind == "roofline" else "caption_published"
            parts.append(text(lang, key))
    return join(lang, "sentences", parts)


def drawn_table(df: pd.DataFrame, kind: str, primary: str | None = None,
                served: dict | None = None) -> pd.DataFrame:
    """The table a figure of `kind` is drawn and described from (so a caption names only what is drawn):
    each target's own compiler's estimates unless the kind compares toolchains, the latest runs."""
    if not CATALOG[kind].every_toolchain:
        df = primary_rows(df, primary, served)
    return latest_runs(df)


def describe(df: pd.DataFrame, name: str, kind: str, args: dict, lang: str, primary: str | None = None,
             served: dict | None = None, model=None) -> dict:
    """Caption and alt text of one figure in one language, from the rows it is drawn from and the run's
    fits (`model`: how far off the curves are out of sample; None: not said)."""
    df = drawn_table(df, kind, primary, served)
    rows = figure_rows(df, kind, args)
    drawn = post_configs(rows) if kind == "experiment" else rows
    if kind == "search" and "search" in rows:  # panels: the searched sizes only
        drawn = rows[rows.search.eq(True)]
    sizes = sorted({int(m) for m in drawn.m.dropna()}) if len(drawn) else []
    estimates = rows[rows.source == "estimate"]
    others = [s for s in ("published", "measured") if (rows.source == s).any()] if kind == "fidelity" else []
    fields = dict(
        experiment=args.get("experiment", ""), dtype=args.get("dtype", ""), target=args.get("target", ""),
        description=experiment_description(
            args["experiment"], views.experiment_kernel(df, args["experiment"]), translations(lang).gettext)
        if "experiment" in args else "",
        sources=sources_sentence(rows, lang, kind) or text(lang, "no_data"),
        libtpu=", ".join(views.versions(estimates, "libtpu_version")) or "?",
        unit=unit_name(args.get("dtype")),
        sizes=(translate(lang, JOINS["range"], first=sizes[0], last=sizes[-1]) if len(sizes) > 1
               else str(sizes[0])) if sizes else "–",
        size_list=join(lang, "list", (str(s) for s in sizes)) or "–",
        n_series=len({plots.config_key(r) for r in drawn.itertuples()}) if len(drawn) else 0,
        others=join(lang, "two", (text(lang, f"others_{s}") for s in others))
        or text(lang, "others_published"),
        targets=join(lang, "list", views.versions(estimates, "target")),
        numbers=kinds_label(kinds_of(rows, kind)[:1], lang),
    )
    entry = CATALOG[kind]
    caption = translate(lang, entry.caption, **fields)
    notes = figure_notes(df, kind, args, lang)
    if kind == "experiment" and model_column(rows, "experiment") == "post":  # the curves' held-out error
        score = views.out_of_sample(df, model, args["experiment"], args["dtype"], args["target"])
        if score:
            notes.insert(0, text(lang, "caption_out_of_sample", score=text(
                lang, "out_of_sample", n=score["n"], pct=100 * (np.exp(score["median_abs_log_ratio"]) - 1))))
    caption = notes_after(lang, caption, notes)  # the figure prints at most three; caption and metadata all
    return {"caption": caption, "alt": translate(lang, entry.alt, **fields),
            "sources": sorted(set(rows.source)) if len(rows) else [], "kinds": kinds_of(rows, kind)}


def figure_notes(df: pd.DataFrame, kind: str, args: dict, lang: str) -> list[str]:
    """Every note a figure has on its numbers (failures, flagged and missing estimates)."""
    df = latest_runs(df)
    if kind == "experiment":
        return plots.experiment_view(df, args["experiment"], args["dtype"], args["target"], lang)[2]
    if kind in ("roofline", "generations"):
        rows = figure_rows(df, kind, args)
        return plots.flagged_line(plots.modelled(plots.default_limit(rows), "model_device_tflops")[0], lang)
    return []


def provenance(df: pd.DataFrame, name: str, kind: str, args: dict, lang: str, title: str,
               model=None) -> dict:
    """What a figure file says about itself: title, caption, sources, toolchain, commit, licence, URLs."""
    rows = figure_rows(latest_runs(df), kind, args)  # df: render's, already the drawn table
    info = describe(df, name, kind, args, lang, model=model)
    toolchain = [f"{tool} {', '.join(views.versions(rows, f'{tool}_version'))}"
                 for tool in ("jax", "jaxlib", "libtpu") if views.versions(rows, f"{tool}_version")]
    c = citation()
    sources = [sources_sentence(rows, lang, kind)]
    if "published" in info["sources"]:
        sources.append(post_attribution(lang))
    return {
        "title": title, "caption": info["caption"], "alt": info["alt"],
        "sources": " ".join(s for s in sources if s),
        "toolchain": ", ".join(toolchain) or "–",
        "commit": ", ".join(views.versions(rows, "git_sha")) or "unknown",
        "licence": f"{RESULTS_LICENCE}; credit: {c.title} v{c.version}"
                   + ("; published numbers: " + c.post_author + f" ({c.post_licence})"
                      if "published" in info["sources"] else ""),
        "post_url": c.post_url, "repository_url": c.repository or "",
        "author": c.authors, "figure": name, "language": lang,
    }


def figure_title(fig) -> str:
    """The title the figure shows (its suptitle, else its first panel's), its lines joined by a dash."""
    title = fig._suptitle.get_text() if fig._suptitle is not None else ""
    if not title:
        title = next((ax.get_title() for ax in fig.axes if ax.get_title()), "")
    return " — ".join(" ".join(line.split()) for line in title.splitlines() if line.strip())


def render(df, name: str, kind: str, args: dict, directory, primary: str | None = None,
           served: dict | None = None, model=None) -> list[Path]:
    """Draw one figure in every language and format, each file carrying its provenance (`primary`,
    `served`: whose estimates are drawn, drawn_table; `model`: the run's fits)."""
    df = drawn_table(df, kind, primary, served)  # one measured curve per configuration: the latest run
    drawn = dict(args, model=model) if CATALOG[kind].uses_model else args
    paths, narrow = [], []
    for lang in LANGUAGES:
        use_style(lang)
        fig = CATALOG[kind].draw(df, lang=lang, **drawn)
        info = provenance(df, name, kind, args, lang, figure_title(fig), model)
        paths += save(fig, stem(directory, name, lang), info)
        if kind in NARROW_KINDS:  # the phone's variant: the same rows and words, a PNG only
            fig = CATALOG[kind].draw(df, lang=lang, narrow=True, **drawn)
            narrow += save(fig, narrow_stem(directory, name, lang), info, formats=("png",))
    return paths + narrow  # every language's files, then the phone's variants
