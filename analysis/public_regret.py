"""The advisor's choice scored on public TPU measurements never fitted on (regret, losses to a
measured XLA, accuracy per generation), printed as markdown or written into docs/ (--docs);
the method: docs/advisor.md, "Scored on public measurements"."""
import math
import re
import sys
from pathlib import Path

import pandas as pd

from tpu_matmul_repro.experiments.core.atomic_write import write_atomic, write_text_atomic
from tpu_matmul_repro.experiments.core.chips import generation_order

GROUP = ["generation", "dtype", "m", "k", "n", "source", "timing"]
MARKERS = ("<!-- public-regret:start -->", "<!-- public-regret:end -->")
BAND_MARKERS = ("<!-- public-band:start -->", "<!-- public-band:end -->")
PAGES = ("advisor.md", "timing-model.md")
XLA = "XLA"


class ScoresError(ValueError):
    """A scores file the tables cannot be made from: one line naming the file, column and value."""


NEEDED = [*GROUP, "kernel", "bm", "bk", "bn", "measured_seconds", "model_seconds", "log_ratio",
          "hi80", "inside80"]


def _csv(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise ScoresError(f"{path}: cannot be read as a CSV: {err}") from None


def _require(frame: pd.DataFrame, path: Path, needed, what: str) -> None:
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ScoresError(f"{path}: columns {missing} missing: not {what}")


def read(path) -> pd.DataFrame:
    path = Path(path)
    scores = _csv(path)
    _require(scores, path, NEEDED, "a public_scores.csv of a pipeline run")
    for column in ("measured_seconds", "model_seconds"):
        values = pd.to_numeric(scores[column], errors="coerce")
        bad = scores[column].notna() & ~(values > 0)
        if bad.any():
            i = bad.idxmax()
            raise ScoresError(f"{path}: row {i + 2}, column {column}: {scores.at[i, column]!r} is not a "
                              "positive number")
    return scores


def label(row) -> str:
    return XLA if row.kernel == "xla" else f"({int(row.bm)},{int(row.bk)},{int(row.bn)})"


def configurations(group: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration of a group: its median measured time, modelled time and 80 % factor."""
    rows = group.assign(config=[label(r) for r in group.itertuples()],
                        factor=group.hi80.astype(float) / group.model_seconds.astype(float))
    return rows.groupby("config", sort=True).agg(
        kernel=("kernel", "first"), measured=("measured_seconds", "median"),
        model=("model_seconds", "first"), factor=("factor", "first"))


def choices(scores: pd.DataFrame) -> pd.DataFrame:
    """Per shape where a source measured two or more modelled configurations: the best measured, the
    model's pick, its regret, its 80 % tie set, and whether a Pallas pick loses to a measured XLA."""
    modelled = scores[scores.model_seconds.notna()]
    rows = []
    for key, group in modelled.groupby(GROUP, sort=True):
        configs = configurations(group)
        if len(configs) < 2:
            continue
        best = configs.measured.idxmin()
        pick = configs.sort_values(["model", "measured"]).index[0]
        ties = configs.index[configs.model <= configs.at[pick, "model"] * configs.at[pick, "factor"]]
        xla_measured = XLA in configs.index
        pallas_pick = pick != XLA
        rows.append(dict(
            zip(GROUP, key, strict=True), configs=len(configs), best=best, pick=pick,
            regret=float(configs.at[pick, "measured"] / configs.at[best, "measured"] - 1),
            tie_set=len(ties), best_in_tie_set=bool(best in ties),
            pallas_pick_vs_xla=bool(xla_measured and pallas_pick),
            loses_to_xla=bool(xla_measured and pallas_pick
                              and configs.at[XLA, "measured"] < configs.at[pick, "measured"])))
    return pd.DataFrame(rows, columns=[*GROUP, "configs", "best", "pick", "regret", "tie_set",
                                       "best_in_tie_set", "pallas_pick_vs_xla", "loses_to_xla"])


def accuracy(scores: pd.DataFrame) -> pd.DataFrame:
    """Per generation with modelled rows: n, median |ln|, median signed ln, 80 % coverage."""
    modelled = scores[scores.model_seconds.notna()]
    rows = [dict(generation=g, n=len(part), median_abs_log_ratio=float(part.log_ratio.abs().median()),
                 median_log_ratio=float(part.log_ratio.median()),
                 coverage80=float(part.inside80.astype(bool).mean()))
            for g, part in modelled.groupby("generation")]
    out = pd.DataFrame(rows, columns=["generation", "n", "median_abs_log_ratio", "median_log_ratio",
                                      "coverage80"])
    return out.sort_values("generation", key=lambda s: s.map(generation_order)).reset_index(drop=True)


def by_generation(scores: pd.DataFrame, table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per generation: accuracy, and the choices' regret and losses to a measured XLA."""
    table = choices(scores) if table is None else table
    out = accuracy(scores)
    extra = []
    for g in out.generation:
        mine = table[table.generation == g]
        vs = mine[mine.pallas_pick_vs_xla.astype(bool)]
        extra.append(dict(shapes=len(mine), pick_is_best=int((mine.regret == 0).sum()),
                          median_regret=float(mine.regret.median()) if len(mine) else math.nan,
                          worst_regret=float(mine.regret.max()) if len(mine) else math.nan,
                          pallas_picks_vs_xla=len(vs), losses_to_xla=int(vs.loses_to_xla.sum())))
    return pd.concat([out, pd.DataFrame(extra, index=out.index)], axis=1)


SEARCH = ["target", "dtype", "m", "k", "n"]
ADVICE_NEEDED = ["target", "m", "k", "n", "dtype", "kernel", "rank", "bm", "bk", "bn", "model_device_ms",
                 "model_post_ms"]


def read_advice(path) -> pd.DataFrame:
    """An `advise --csv` table: the best block and XLA of each search (the rows the pick needs)."""
    path = Path(path)
    advice = _csv(path)
    if "cut" in advice.columns:  # a record of this function's own
        return advice
    _require(advice, path, [*ADVICE_NEEDED, "status", "note"], "the output of advise --csv")
    # a search the time budget cut is not a whole answer: its pick is left out (advisor_picks)
    spent = (advice.status == "timeout") & advice.note.fillna("").astype(str).str.contains("time budget")
    cut = spent.groupby([advice[c] for c in SEARCH]).transform("any")
    kept = (advice["rank"] == 1) | (advice.kernel == "xla")
    return advice[kept][ADVICE_NEEDED].assign(cut=cut[kept].astype(bool)).reset_index(drop=True)


def advisor_picks(scores: pd.DataFrame, advice: pd.DataFrame) -> pd.DataFrame:
    """Per public XLA measurement at a shape the advice covers, where nothing else was measured: the
    advisor's pick, its modelled time, whether it loses to the measured XLA, and whether it would if
    the model erred on the block as on XLA (`xla_bias`)."""
    xla = scores[(scores.kernel == "xla") & scores.model_seconds.notna()]
    bias = xla.groupby(["generation", "dtype"]).log_ratio.median()
    others = scores[scores.kernel != "xla"].groupby(["generation", "dtype", "m", "k", "n"]).size()
    rows = []
    for (target, dtype, m, k, n), search in advice.groupby(SEARCH):
        if (target, dtype, m, k, n) in others.index or search.get("cut", pd.Series(False)).any():
            continue
        best = search[(search.kernel != "xla") & search.model_device_ms.notna()].sort_values("rank")
        by_xla = search[(search.kernel == "xla") & search.model_device_ms.notna()]
        if best.empty and by_xla.empty:
            continue
        use_xla = bool(len(by_xla)) and (best.empty or
                                         by_xla.model_device_ms.iloc[0] < best.model_device_ms.iloc[0])
        pick = (by_xla if use_xla else best).iloc[0]
        here = xla[(xla.generation == target) & (xla.dtype == dtype) & (xla.m == m) & (xla.k == k)
                   & (xla.n == n)]
        for r in here.itertuples():
            time = "device" if r.timing == "device" else "post"
            modelled = float(pick[f"model_{time}_ms"]) / 1e3
            as_xla = modelled * math.exp(-float(bias[(target, dtype)]))
            rows.append(dict(generation=target, dtype=dtype, m=m, k=k, n=n, source=r.source, timing=r.timing,
                             pick=label(pick), pick_seconds=modelled, xla_measured=float(r.measured_seconds),
                             loses_to_xla=bool(not use_xla and r.measured_seconds < modelled),
                             xla_bias=float(bias[(target, dtype)]),
                             loses_if_erred_as_xla=bool(not use_xla and r.measured_seconds < as_xla)))
    return pd.DataFrame(rows, columns=["generation", "dtype", "m", "k", "n", "source", "timing", "pick",
                                       "pick_seconds", "xla_measured", "loses_to_xla", "xla_bias",
                                       "loses_if_erred_as_xla"])


def picks_summary(picks: pd.DataFrame) -> pd.DataFrame:
    """Per generation and dtype: the advisor's picks against measured XLA, and their losses."""
    rows = []
    for (g, dtype), part in picks.groupby(["generation", "dtype"]):
        pallas = part[part.pick != XLA]
        lost = pallas[pallas.loses_to_xla.astype(bool)]
        rows.append(dict(generation=g, dtype=dtype, rows=len(part), shapes=len(part[["m", "k", "n"]]
                                                                               .drop_duplicates()),
                         pallas_picks=len(pallas), losses=len(lost),
                         median_loss=float((lost.pick_seconds / lost.xla_measured - 1).median())
                         if len(lost) else math.nan,
                         xla_bias=float(part.xla_bias.iloc[0]),
                         losses_if_erred_as_xla=int(pallas.loses_if_erred_as_xla.astype(bool).sum())))
    out = pd.DataFrame(rows, columns=["generation", "dtype", "rows", "shapes", "pallas_picks", "losses",
                                      "median_loss", "xla_bias", "losses_if_erred_as_xla"])
    return out.sort_values(["generation", "dtype"], key=lambda s: s.map(generation_order)
                           if s.name == "generation" else s).reset_index(drop=True)


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:.1f} %"


def markdown(scores: pd.DataFrame, advice: pd.DataFrame | None = None) -> str:
    """The tables and a sentence per generation without a choice, as docs/advisor.md prints them."""
    table = choices(scores)
    summary = by_generation(scores, table)
    lines = ["| generation | modelled rows | median abs(ln) | median ln | 80 % coverage | shapes with a "
             "choice | pick is the best | median regret | worst regret | Pallas pick loses to a measured "
             "XLA |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in summary.itertuples():
        losses = f"{r.losses_to_xla} of {r.pallas_picks_vs_xla}" if r.pallas_picks_vs_xla else "–"
        lines.append(f"| {r.generation} | {r.n} | {r.median_abs_log_ratio:.3f} | {r.median_log_ratio:+.3f} "
                     f"| {r.coverage80:.2f} | {r.shapes} | {r.pick_is_best if r.shapes else '–'} | "
                     f"{_pct(r.median_regret)} | {_pct(r.worst_regret)} | {losses} |")
    lines += ["", "| generation | dtype | shape | source | timing | configurations | best measured | "
              "model's pick | regret | tie set | best in tie set | loses to XLA |", "|" + "---|" * 12]
    for r in table.itertuples():
        loses = ("yes" if r.loses_to_xla else "no") if r.pallas_pick_vs_xla else "–"
        lines.append(f"| {r.generation} | {r.dtype} | {r.m}x{r.k}x{r.n} | {r.source} | {r.timing} | "
                     f"{r.configs} | {r.best} | {r.pick} | {_pct(r.regret)} | {r.tie_set} | "
                     f"{'yes' if r.best_in_tie_set else 'no'} | {loses} |")
    without = [g for g in summary.generation if not (table.generation == g).any()]
    if without:
        lines += ["", f"No shape on {', '.join(without)} has two measured configurations that the model "
                  "predicts: there the pick is scored against a measured XLA only (below)."]
    if advice is not None:
        picks = picks_summary(advisor_picks(scores, advice))
        lines += ["", "| generation | dtype | XLA measurements | shapes | advisor picks a block | its "
                  "modelled time is longer than XLA's measured | median by how much | the model on XLA "
                  "here (median) | block picks that lose if the model errs on them as on XLA |",
                  "|" + "---|" * 9]
        for r in picks.itertuples():
            lines.append(f"| {r.generation} | {r.dtype} | {r.rows} | {r.shapes} | {r.pallas_picks} | "
                         f"{r.losses} | {_pct(r.median_loss)} | {_pct(math.exp(r.xla_bias) - 1)} | "
                         f"{r.losses_if_erred_as_xla} |")
        cut = advice[advice.cut].groupby(SEARCH).size() if "cut" in advice else []
        if len(cut):
            lines += ["", f"{len(cut)} searches that the advisor's time budget cut are left out: "
                      f"{', '.join(f'{m}x{k}x{n} {d} on {t}' for t, d, m, k, n in cut.index)}."]
    return "\n".join(lines)


def band_sentence(scores: pd.DataFrame) -> str:
    """What the public errors make of the advisor's band off v5e, per generation (docs/timing-model.md)."""
    from tpu_matmul_repro.analysis.intervals import public_halfwidths

    summary = accuracy(scores).set_index("generation")
    parts = []
    for target, (n, widths) in public_halfwidths(scores).items():
        floor = ", ".join(f"x/{math.exp(q):.2f} at {round(100 * level)} %" for level, q in widths.items()
                          if math.isfinite(q))
        parts.append(f"on {target}, {n} public measurements put it at {floor or 'no level (too few)'} "
                     f"(inside the pipeline's 80 % band: {summary.at[target, 'coverage80']:.2f} of them)")
    if not parts:
        return "In the recorded scores no generation other than v5e has a modelled public measurement."
    return "In the recorded scores (docs/data/public_scores.csv): " + "; ".join(parts) + "."


RECORDS = ("public_scores.csv", "public_advice.csv")


def _replace(page: Path, markers: tuple, text: str) -> str:
    old = page.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(markers[0]) + r"\n.*?\n" + re.escape(markers[1]), re.S)
    if not pattern.search(old):
        raise ScoresError(f"{page}: no {markers[0]} ... {markers[1]} markers")
    return pattern.sub(lambda _: f"{markers[0]}\n{text}\n{markers[1]}", old)


def write_docs(folder: Path, scores: pd.DataFrame, advice: pd.DataFrame | None) -> None:
    """The tables and the band's sentence into the pages' markers, and their rows into data/."""
    advisor = _replace(folder / PAGES[0], MARKERS, markdown(scores, advice))
    model = _replace(folder / PAGES[1], BAND_MARKERS, band_sentence(scores))
    data = folder / "data"
    data.mkdir(exist_ok=True)
    # every digit kept: the tests recompute the pages' tables from these rows
    write_atomic(data / RECORDS[0], lambda tmp: scores[NEEDED].to_csv(tmp, index=False))
    if advice is not None:
        write_atomic(data / RECORDS[1], lambda tmp: advice.to_csv(tmp, index=False))
    write_text_atomic(advisor, folder / PAGES[0])
    write_text_atomic(model, folder / PAGES[1])


def in_docs(page: Path, markers: tuple = MARKERS) -> str:
    """The text between the page's markers ("" where there are none)."""
    found = re.search(re.escape(markers[0]) + r"\n(.*?)\n" + re.escape(markers[1]),
                      page.read_text(encoding="utf-8"), re.S)
    return found.group(1) if found else ""


USAGE = ("usage: python3 -m tpu_matmul_repro.analysis.public_regret [SCORES.csv] [--advice ADVICE.csv] "
         "[--docs DIR]")


def _option(args: list, name: str):
    if name not in args:
        return None
    i = args.index(name)
    if i + 1 >= len(args):
        raise ValueError(name)
    value = args.pop(i + 1)
    args.pop(i)
    return value


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        docs, advice_path = _option(args, "--docs"), _option(args, "--advice")
    except ValueError:
        print(USAGE, file=sys.stderr)
        return 2
    if len(args) > 1 or any(a.startswith("-") for a in args):
        print(USAGE, file=sys.stderr)
        return 2
    try:
        scores = read(args[0] if args else "results/public_scores.csv")
        advice = read_advice(advice_path) if advice_path else None
        text = markdown(scores, advice)
        if docs is not None:
            write_docs(Path(docs), scores, advice)
    except (ScoresError, OSError) as err:
        print(err, file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
