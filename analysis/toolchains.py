"""Rows by toolchain: each target's estimates from its own compiler (`primary_rows`, what the figures,
findings and report read), and the toolchains a table holds."""
import pandas as pd

from tpu_matmul_repro.experiments.core.chips import POST_CHIP


def primary_rows(df: pd.DataFrame, primary: str | None, served: dict | None = None) -> pd.DataFrame:
    """`df` with each target's estimates from its own compiler only: the toolchain `served` names for
    that target (experiments/plan/toolchains.served), else `primary` (None: `df` unchanged)."""
    if primary is None or "toolchain" not in df:
        return df
    served = served or {}
    compiler = df.target.map(lambda target: served.get(target, primary))
    return df[(df.source != "estimate") | (df.toolchain == compiler)]


def toolchains_of(df: pd.DataFrame, primary: str | None) -> list[str]:
    """The toolchains with estimates for the post's chip, the other ones (older) first, `primary` last."""
    est = df[(df.source == "estimate") & (df.target == POST_CHIP)]
    names = sorted(set(est.toolchain.dropna()) - {primary, ""}) if "toolchain" in est else []
    return names + ([primary] if primary in set(est.get("toolchain", ())) else [])
