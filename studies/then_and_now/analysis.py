"""Then and now: the post's configurations under each toolchain, against the post's own verdicts (the
core reads each target's own compiler's estimates only; this study reads every toolchain's).
"""
import pandas as pd

from tpu_matmul_repro.analysis.claims import claims_table, feasibility_claims
from tpu_matmul_repro.analysis.summaries import MATCH, default_limit, post_configs
from tpu_matmul_repro.analysis.toolchain_rows import primary_rows, toolchains_of
from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.kernels import is_pallas
from tpu_matmul_repro.studies.toolchains import short_error


def then_and_now(df: pd.DataFrame, primary: str | None = None) -> pd.DataFrame:
    """One row per Pallas configuration the post published, its verdict (published_status), then per
    toolchain T: T_status, T_vmem_bytes (used, or requested when out of VMEM), T_limit_bytes, T_agrees (ok
    with ok, vmem_oom with failed), T_libtpu, T_error; an empty status where T has no estimate."""
    published = df[(df.source == "published") & (df.target == POST_CHIP) & is_pallas(df.kernel)]
    out = published[MATCH + ["status"]].rename(columns={"status": "published_status"}).drop_duplicates(MATCH)
    estimates = post_configs(default_limit(df[(df.source == "estimate") & (df.target == POST_CHIP)]))
    for name in toolchains_of(df, primary):
        rows = estimates[estimates.toolchain == name].drop_duplicates(MATCH)
        rows = rows[MATCH + ["status", "vmem_bytes", "vmem_limit_bytes", "libtpu_version", "error"]]
        rows = rows.rename(columns={"status": f"{name}_status", "vmem_bytes": f"{name}_vmem_bytes",
                                    "vmem_limit_bytes": f"{name}_limit_bytes",
                                    "libtpu_version": f"{name}_libtpu",
                                    "error": f"{name}_error"})
        # the compiler's first line says why (the rest is the kernel's serialised body)
        rows[f"{name}_error"] = rows[f"{name}_error"].fillna("").map(short_error)
        out = out.merge(rows, on=MATCH, how="left")
        status = out[f"{name}_status"]
        agrees = (((status == "ok") & (out.published_status == "ok")) | (
            (status == "vmem_oom") & (out.published_status == "failed"))).astype("boolean")
        agrees[~status.isin(["ok", "vmem_oom"])] = pd.NA  # nothing compiled: no verdict to compare
        out[f"{name}_agrees"] = agrees
    names = toolchains_of(df, primary)
    if names:  # the configurations at least one toolchain compiled (a run's sizes may be fewer)
        out = out[out[[f"{n}_status" for n in names]].notna().any(axis=1)]
    order = {"v1": 1, "v2": 2, "v3": 3, "v4": 4, "v5": 5}
    out = out.assign(_order=out.experiment.map(order).fillna(9))
    return out.sort_values(["_order", "dtype", "bm", "bk", "bn", "m"], na_position="first").drop(
        columns="_order").reset_index(drop=True)


def disagrees(value) -> bool:
    """True where a toolchain's verdict differs from the post's (not where it has none)."""
    return value is not pd.NA and pd.notna(value) and not bool(value)


def toolchains_in(table: pd.DataFrame) -> list[str]:
    """The toolchains of a then-and-now table, in its columns' order."""
    return [c[: -len("_agrees")] for c in table.columns if c.endswith("_agrees")]


def from_csv(table: pd.DataFrame) -> pd.DataFrame:
    """then_and_now.csv as read back from its file, as then_and_now() returned it: the `T_agrees`
    columns true, false or NA again (the file holds them as text or numbers)."""
    table = table.copy()
    read = {"True": True, "False": False, "1": True, "0": False, "1.0": True, "0.0": False}
    for name in toolchains_in(table):
        column = f"{name}_agrees"
        bad = [v for v in table[column].dropna() if str(v) not in read]
        if bad:
            raise ValueError(f"then_and_now.csv: column {column!r} holds {bad[0]!r}, not True, False or "
                             "empty")
        table[column] = table[column].map(lambda v: pd.NA if pd.isna(v) else read[str(v)]).astype("boolean")
    return table


def agreement(table: pd.DataFrame, name: str) -> dict:
    """Feasibility agreement of toolchain `name` with the post where it compiled, and its libtpu."""
    compared = table[f"{name}_agrees"].dropna().astype(bool) if f"{name}_agrees" in table else pd.Series([])
    libtpu = table[f"{name}_libtpu"].dropna() if f"{name}_libtpu" in table else pd.Series([])
    return dict(toolchain=name, n=len(compared), agree=int(compared.sum()),
                disagree=int((~compared).sum()), total=len(table),
                fraction=float(compared.mean()) if len(compared) else float("nan"),
                libtpu=str(libtpu.iloc[0]) if len(libtpu) else "?")


def missing_reason(df: pd.DataFrame, name: str) -> str | None:
    """Why toolchain `name` has no results (its rows' error), or None if it compiled something."""
    rows = df[(df.source == "estimate") & (df.toolchain == name)]
    if len(rows) and (rows.status == "toolchain_error").all():
        return str(rows.error.iloc[0])
    return None


def claims_then(df: pd.DataFrame, primary: str | None) -> pd.DataFrame:
    """The post's claims about what compiles, checked under each toolchain but `primary` (claims.csv's
    columns, the older toolchains first; empty with one toolchain): then_and_now_claims.csv, the key
    findings' column beside this run's verdict (section.py)."""
    parts = [claims_table(primary_rows(df, other), None, other, only=feasibility_claims())
             for other in toolchains_of(df, primary) if other != primary]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def verdict_changes(table: pd.DataFrame, before: str, after: str) -> dict:
    """Between two toolchains of then_and_now.csv (`before` the older): the configurations both compiled
    to a verdict (ok or out of VMEM), those whose verdict differs (their rows), and how many ask a
    different number of VMEM bytes."""
    status_before, status_after = table[f"{before}_status"], table[f"{after}_status"]
    both = table[status_before.isin(["ok", "vmem_oom"]) & status_after.isin(["ok", "vmem_oom"])]
    changed = both[both[f"{before}_status"] != both[f"{after}_status"]]
    bytes_differ = both[f"{before}_vmem_bytes"] != both[f"{after}_vmem_bytes"]
    return dict(before=before, after=after, n=len(both), changed=changed.reset_index(drop=True),
                bytes_differ=int(bytes_differ.sum()))
