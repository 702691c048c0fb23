"""The report's "Then and now" section: the post's configurations under each toolchain.

Its messages are marked with gettext() here and in templates/then_and_now.html.j2; experiments/core/i18n.py
extracts both, so a missing translation stops the build like any other.
"""
import pandas as pd

from experiments.analysis.toolchains import agreement, disagrees, missing_reason, then_and_now, toolchains_of
from experiments.core.units import MiB
from report.tables import TOOLCHAIN_NAMES


def toolchain_name(name: str, gettext) -> str:
    """"today's compiler" for the config's `current`, "the post's compiler" for `post`, else "toolchain
    <name>" (a name from the config)."""
    if name in TOOLCHAIN_NAMES:
        return gettext(TOOLCHAIN_NAMES[name])
    return gettext("toolchain %(name)s") % {"name": name}


def result_cell(status, vmem, error, gettext) -> str:
    """'ok, 12.32 MiB', 'out of VMEM, 48.82 MiB', '≥ 192.00 MiB, not compiled', or the status."""
    if not isinstance(status, str) or not status:
        return "–"
    if status == "ok" and pd.notna(vmem):
        return gettext("ok, %(mib).2f MiB") % {"mib": vmem / MiB}
    if status == "vmem_oom" and pd.notna(vmem):
        if str(error).startswith("not compiled"):
            return gettext("out of VMEM, ≥ %(mib).2f MiB (not compiled)") % {"mib": vmem / MiB}
        return gettext("out of VMEM, %(mib).2f MiB") % {"mib": vmem / MiB}
    return status


def config_cell(row) -> str:
    if pd.isna(row.bm):
        return f"{row.experiment}"
    if row.kernel == "v2":
        return f"{row.experiment}, N = {int(row.m // row.bm)}"
    return f"{row.experiment} ({int(row.bm)}, {int(row.bk)}, {int(row.bn)})"


def section(df: pd.DataFrame, primary: str | None, gettext) -> dict | None:
    """Context for the template, or None when this run has a single toolchain."""
    names = toolchains_of(df, primary)
    if len(names) < 2:
        return None
    table = then_and_now(df, primary)
    est = df[(df.source == "estimate") & (df.target == "v5e")]
    columns, summaries, missing = [], [], []
    for name in names:
        first = est[est.toolchain == name].iloc[0]
        a = agreement(table, name)
        columns.append(dict(name=name, jax=first.jax_version, libtpu=first.libtpu_version))
        reason = missing_reason(df, name)
        if reason:
            missing.append(dict(name=toolchain_name(name, gettext), reason=reason))
            continue
        no_cycles = est[(est.toolchain == name) & (est.cycles_method == "no_static_profile")]
        summaries.append(dict(name=toolchain_name(name, gettext), jax=first.jax_version,
                              libtpu=first.libtpu_version, agree=a["agree"],
                              n=a["n"], total=a["total"], pct=100 * a["fraction"] if a["n"] else 0.0,
                              no_cycles=len(no_cycles) > 0))
    verdicts = {"ok": gettext("ok"), "failed": gettext("failed")}
    rows = []
    for r in table.itertuples():
        cells = []
        for name in names:
            agrees = getattr(r, f"{name}_agrees")
            cells.append(dict(text=result_cell(getattr(r, f"{name}_status"), getattr(r, f"{name}_vmem_bytes"),
                                               getattr(r, f"{name}_error"), gettext),
                              disagrees=disagrees(agrees)))
        rows.append(dict(config=config_cell(r), dtype=r.dtype, size=int(r.m),
                         post=verdicts.get(r.published_status, r.published_status), cells=cells))
    return dict(columns=columns, summaries=summaries, missing=missing, rows=rows)
