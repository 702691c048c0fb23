"""Rows by toolchain: each target's estimates from its own compiler (`primary_rows`, what the figures,
findings and report read), the toolchains a table holds, and the names and errors with which the
studies that compare toolchains quote the post's configurations."""
import re

import pandas as pd

from tpu_matmul_repro.experiments.core.cases import config_label
from tpu_matmul_repro.experiments.core.chips import POST_CHIP


def short_error(error: str) -> str:
    """The compiler's sizes for an out-of-VMEM error, else its first line (the rest is the kernel)."""
    found = re.search(r"Scoped allocation with size \S+ and limit \S+", error)
    return found.group(0) if found else (error.splitlines()[0][:300] if error else "")


def config_name(experiment: str, kernel: str, dtype: str, m: int, bm, bk, bn) -> str:
    """e.g. "v2 N = 4, 2048" or "v4 (512, 1024, 1024) bfloat16, 2048": a post configuration as the
    then-and-now and history figures name it."""
    blocks = config_label(kernel, m, bm, bk, bn)
    words = [experiment, blocks, "" if dtype == "float32" else dtype]
    return f"{' '.join(w for w in words if w)}, {int(m)}"


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
