"""The report's "beyond the post" section: for each layer shape of the config's `advice.shapes`, the
advisor's best blocks per target (results/advice/<shape>.csv, rules/advice.smk) beside XLA's estimate.
Every number is modelled from a libtpu estimate, in device time, with its 80 % prediction interval:
the same column the advice figure draws."""
import pandas as pd

from tpu_matmul_repro.experiments.core.cases import config_label
from tpu_matmul_repro.experiments.core.chips import POST_CHIP


def _rate(row) -> str:
    return (f"{row.model_device_tflops:.0f} [{row.model_device_tflops_lo80:.0f}–"
            f"{row.model_device_tflops_hi80:.0f}]")


def advice_section(tables: dict[str, pd.DataFrame], figures, gettext) -> list[dict]:
    """One entry per shape: its figure (`figures`: the report's numbering, build.Figures) and a row per
    target (best blocks, their rate and VMEM, how many other blocks tie with them within the interval,
    XLA's rate)."""
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
                ties=int(ranked.tie.notna().sum()),
                xla=_rate(xla.iloc[0]) if len(xla) else "–",
                unchecked=target != POST_CHIP))
        if rows:
            m, k, n = shape.split("x")
            out.append(dict(shape=f"{m} × {k} × {n}", figure=figures(f"advice_{shape}"), rows=rows))
    return out
