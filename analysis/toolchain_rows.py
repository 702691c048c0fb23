"""Rows by toolchain: each target's estimates from its own compiler (`primary_rows`, what the figures,
findings and report read), and the toolchains a table holds."""
import pandas as pd
from packaging.version import InvalidVersion, Version

from tpu_matmul_repro.experiments.core.chips import POST_CHIP


def primary_rows(df: pd.DataFrame, primary: str | None, served: dict | None = None) -> pd.DataFrame:
    """`df` with each target's estimates from its own compiler only: `served`'s for that target, else
    `primary` (None: `df` unchanged)."""
    if primary is None or "toolchain" not in df:
        return df
    served = served or {}
    compiler = df.target.map(lambda target: served.get(target, primary))
    return df[(df.source != "estimate") | (df.toolchain == compiler)]


def toolchains_of(df: pd.DataFrame, primary: str | None) -> list[str]:
    """The toolchains with estimates for the post's chip, oldest jax release first, `primary` last."""
    est = df[(df.source == "estimate") & (df.target == POST_CHIP)]
    names = sorted(set(est.toolchain.dropna()) - {primary, ""}) if "toolchain" in est else []
    if "jax_version" in est:
        releases = est.dropna(subset=["toolchain"]).groupby("toolchain").jax_version.first()
        names.sort(key=lambda name: (release_key(releases.get(name)), name))
    return names + ([primary] if primary in set(est.get("toolchain", ())) else [])


def release_key(version) -> tuple:
    """A sort key for a jax version ("0.4.36" before "0.10.2"); an unknown one sorts last."""
    try:
        return (0, Version(str(version)))
    except InvalidVersion:
        return (1, Version("0"))
