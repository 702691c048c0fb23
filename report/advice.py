"""The advisor's recommendation in words, in the report's languages (the CLI prints the same line),
and the report's "beyond the post" section: per layer shape of `advice.shapes`, the advisor's best
blocks per target beside XLA's estimate, in modelled device time with its 80 % band."""
import math

import pandas as pd

from tpu_matmul_repro.analysis.summaries import blocks_text
from tpu_matmul_repro.analysis.views import tied as marked_tie
from tpu_matmul_repro.experiments.core.cases import config_label
from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.experiments.core.i18n import N_
from tpu_matmul_repro.experiments.core.units import MiB

LEVEL = 80  # the interval (%) that calls ties: the text table's, the recommendation's
SHOWN_TIES = 8  # blocks the recommendation names before "and N more"
PRUNED = "pruned"  # the advisor's status of a candidate not compiled: its bound cannot win or tie
# the note (and error) of a configuration the advisor did not compile because its time budget ran out
BUDGET_SPENT = "not compiled: the time budget ran out"


def _same(message: str) -> str:
    return message


def blocks_label(r) -> str:
    """'(bm,bk,bn)'; a row without blocks (XLA) by its kernel's name."""
    if any(pd.isna(getattr(r, b)) for b in ("bm", "bk", "bn")):
        return str(r.kernel)
    return blocks_text(r.bm, r.bk, r.bn, sep=",")


def budget_spent(table: pd.DataFrame) -> pd.Series:
    """Rows the advisor's time budget left without a compile."""
    notes = table.note if "note" in table else pd.Series("", index=table.index)
    return (table.status == "timeout") & notes.fillna("").astype(str).str.contains(BUDGET_SPENT, regex=False)


def padded(r) -> bool:
    shape = getattr(r, "padded_shape", None)  # absent from tables of shapes that needed no padding
    return isinstance(shape, str) and bool(shape)


def _pct(ratio: float) -> float:
    return 100 * (ratio - 1)


def recommendation(table: pd.DataFrame, limit_bytes: int, gettext=_same, csv_hint: bool = True) -> str:
    """One line: the block shape to use, or XLA, or the set the model cannot tell apart, and why, from an
    advice table's modelled device times, the fastest one's 80 % band and the unbuilt blocks' bounds;
    `csv_hint`: "(--csv lists them)" after a shortened list (the CLI's)."""
    _ = gettext
    pallas = table[(table.kernel != "xla") & table["rank"].notna()].sort_values("rank")
    xla = table[(table.kernel == "xla") & table.model_device_ms.notna()]
    limit = round(limit_bytes / MiB)
    spent = budget_spent(table).any()
    if pallas.empty:
        if xla.empty and spent:
            return _(N_("No advice: the time budget ran out before a candidate block or XLA was compiled"))
        if xla.empty:
            return _(N_("No advice: no candidate block fits the %(limit)d MiB limit and XLA's estimate "
                        "failed")) % dict(limit=limit)
        if spent:
            return _(N_("Use XLA: no candidate block was compiled within the time budget"))
        return _(N_("Use XLA: no candidate block fits the %(limit)d MiB scoped-VMEM limit")) % dict(
            limit=limit)
    best = pallas.iloc[0]
    t_best = float(best.model_device_ms)
    t_xla = float(xla.model_device_ms.iloc[0]) if len(xla) else math.inf
    xla_leads = t_xla < t_best
    leader = xla.iloc[0] if xla_leads else best
    factor = float(leader.model_device_ms_hi80 / leader.model_device_ms)
    band = _(N_("the %(level)d %% band (x/%(factor).2f)")) % dict(level=LEVEL, factor=factor)
    said_tie = marked_tie(pallas)
    tied = pallas[said_tie | ((pallas["rank"] == 1) & (not xla_leads))]
    xla_tied = xla_leads or t_xla <= t_best * factor
    best_name = blocks_label(best)
    if padded(best):
        best_name = _(N_("%(blocks)s padded to %(shape)s")) % dict(blocks=best_name, shape=best.padded_shape)

    def listed(rows) -> str:
        """The blocks' names; twins (the same modelled time, the advisor's same_time_as) as one."""
        twins = rows.same_time_as.fillna("") if "same_time_as" in rows else pd.Series("", index=rows.index)
        firsts = rows[twins == ""]
        names = ", ".join(" = ".join([blocks_label(r), *(blocks_label(t) for t in
                                                         rows[twins == blocks_label(r)].itertuples())])
                          for r in firsts.head(SHOWN_TIES).itertuples())
        more = len(firsts) - SHOWN_TIES
        if more <= 0:
            return names
        said = N_("%(blocks)s and %(n)d more (--csv lists them)") if csv_hint else \
            N_("%(blocks)s and %(n)d more")
        return _(said) % dict(blocks=names, n=more)

    if xla_leads:
        gap = _(N_("XLA is modelled %(pct).0f %% faster than the best blocks %(blocks)s")) % dict(
            pct=_pct(t_best / t_xla), blocks=best_name)
        if tied.empty:
            return _(N_("Use XLA: %(gap)s, beyond %(band)s")) % dict(gap=gap, band=band)
        if len(tied) == 1:
            return _(N_("XLA or this block: %(gap)s, inside %(band)s")) % dict(gap=gap, band=band)
        return _(N_("XLA or any of these %(n)d blocks: %(gap)s, inside %(band)s: %(blocks)s")) % dict(
            n=len(tied), gap=gap, band=band, blocks=listed(tied))
    if len(xla):
        said = N_("XLA is modelled %(pct).0f %% slower, inside the band") if xla_tied else \
            N_("XLA is modelled %(pct).0f %% slower, beyond the band")
        versus = _(said) % dict(pct=_pct(t_xla / t_best))
    elif budget_spent(table[table.kernel == "xla"]).any():
        versus = _(N_("XLA was not compiled within the time budget"))
    else:
        versus = _(N_("XLA's estimate failed"))
    if len(tied) == 1 and not xla_tied:
        return _(N_("Use %(blocks)s: %(why)s; %(versus)s")) % dict(
            blocks=best_name, why=_next_block(table, pallas, t_best, band, _), versus=versus)
    if len(tied) == 1:
        return _(N_("%(best)s or XLA, which the model cannot tell apart (the block at %(ms).3f ms): "
                    "%(versus)s")) % dict(best=best_name, ms=t_best, versus=versus)
    said = N_("Any of these %(n)d blocks or XLA, which the model cannot tell apart (each within %(band)s of "
              "the best, %(best)s at %(ms).3f ms): %(blocks)s; %(versus)s") if xla_tied else \
        N_("Any of these %(n)d blocks, which the model cannot tell apart (each within %(band)s of the best, "
           "%(best)s at %(ms).3f ms): %(blocks)s; %(versus)s")
    return _(said) % dict(n=len(tied), band=band, best=best_name, ms=t_best, blocks=listed(tied),
                          versus=versus)


def _next_block(table: pd.DataFrame, pallas: pd.DataFrame, t_best: float, band: str, _) -> str:
    """How much faster the best block is than every other: than the next compiled one, or, where a
    block not compiled has a lower bound below that one's time, at least than that bound."""
    pruned = table[table.status == PRUNED].lower_bound_seconds.astype(float) * 1e3
    after = pallas.iloc[1] if len(pallas) > 1 else None
    if after is not None and not (pruned < after.model_device_ms).any():
        return _(N_("modelled %(pct).0f %% faster than the next, %(next)s, beyond %(band)s")) % dict(
            pct=_pct(after.model_device_ms / t_best), next=blocks_label(after), band=band)
    if pruned.empty:
        return _(N_("the only block that fits"))
    return _(N_("modelled at least %(pct).0f %% faster than any other block (by the bound of the %(n)d not "
                "compiled), beyond %(band)s")) % dict(pct=_pct(pruned.min() / t_best), n=len(pruned),
                                                      band=band)


def _rate(row) -> str:
    return (f"{row.model_device_tflops:.0f} [{row.model_device_tflops_lo80:.0f}–"
            f"{row.model_device_tflops_hi80:.0f}]")


def advice_section(tables: dict[str, pd.DataFrame], figures, gettext) -> list[dict]:
    """One entry per shape: its figure and a row per target (best blocks, their rate and VMEM, the ties,
    XLA's rate, the recommendation)."""
    out = []
    for shape, table in tables.items():
        rows = []
        for target, mine in table.groupby("target", sort=False):
            ranked = mine[(mine.kernel != "xla") & mine["rank"].notna()].sort_values("rank")
            if ranked.empty:
                continue
            best = ranked.iloc[0]
            xla = mine[(mine.kernel == "xla") & mine.model_device_tflops.notna()]
            rows.append(dict(
                target=target, blocks=config_label(best.kernel, best.m, best.bm, best.bk, best.bn),
                tflops=_rate(best),
                vmem=f"{best.vmem_mib:.1f} / {best.vmem_limit_mib:.0f}",
                ties=int(marked_tie(ranked).sum()),
                xla=_rate(xla.iloc[0]) if len(xla) else "–",
                recommendation=recommendation(mine, round(best.vmem_limit_mib * MiB), gettext,
                                              csv_hint=False),
                unchecked=target != POST_CHIP))
        if rows:
            m, k, n = shape.split("x")
            figure = (figures([f"advice_{shape}"]) or [None])[0]
            out.append(dict(shape=f"{m} × {k} × {n}", figure=figure, rows=rows))
    return out
