"""Findings computed from the tidy table, never written by hand: the configurations each experiment's
findings are about come from the post's claims (analysis/claims.py), with the numbers the figures
beside them draw."""
import dataclasses

import pandas as pd

from tpu_matmul_repro.analysis import claims
from tpu_matmul_repro.analysis.summaries import (
    HIGHEST_KERNEL,
    XLA_PRECISION,
    best_vs_xla,
    default_limit,
    post_configs,
)
from tpu_matmul_repro.experiments.core.units import MiB
from tpu_matmul_repro.kernels import is_pallas


@dataclasses.dataclass
class Feasibility:
    """Where a configuration stops compiling at the default scoped-VMEM limit."""

    largest_ok: int | None
    first_failure: int | None
    need_mib: float | None
    limit_mib: float | None


def estimates(df: pd.DataFrame, target: str) -> pd.DataFrame:
    return df[(df.source == "estimate") & (df.target == target)]


def feasibility(rows: pd.DataFrame) -> Feasibility | None:
    """Rows of one configuration over sizes (estimates, one target)."""
    rows = default_limit(rows).sort_values("m")
    if rows.empty:
        return None
    ok = rows[rows.status == "ok"]
    failed = rows[rows.status == "vmem_oom"]
    first = failed.iloc[0] if len(failed) else None
    limit = None
    if first is not None:
        limit = first.oom_limit_bytes if pd.notna(first.oom_limit_bytes) else first.vmem_limit_bytes
    return Feasibility(
        largest_ok=int(ok.m.max()) if len(ok) else None,
        first_failure=int(first.m) if first is not None else None,
        need_mib=float(first.vmem_bytes) / MiB if first is not None and pd.notna(first.vmem_bytes) else None,
        limit_mib=float(limit) / MiB if limit is not None and pd.notna(limit) else None,
    )


def config_rows(df, target, experiment, dtype, kernel, blocks=None) -> pd.DataFrame:
    rows = estimates(df, target)
    rows = rows[(rows.experiment == experiment) & (rows.dtype == dtype) & (rows.kernel == kernel)]
    if blocks is not None:
        rows = rows[(rows.bm == blocks[0]) & (rows.bk == blocks[1]) & (rows.bn == blocks[2])]
    return rows


def tflops_at(rows: pd.DataFrame, size: int) -> float | None:
    hit = default_limit(rows)
    hit = hit[(hit.m == size) & (hit.status == "ok")].tflops.dropna()
    return float(hit.iloc[0]) if len(hit) else None


def xla_default(rows: pd.DataFrame) -> pd.DataFrame:
    """XLA's rows at the precision the post compared with (DEFAULT), never its HIGHEST variant."""
    xla = rows[~is_pallas(rows.kernel)]
    if "precision" in xla and xla.precision.fillna("").ne("").all():
        return xla[xla.precision == XLA_PRECISION]
    return xla[xla.kernel != HIGHEST_KERNEL]


@dataclasses.dataclass
class Versus:
    """A Pallas number as a fraction of XLA at DEFAULT precision: this run's (`basis` "run"), or where
    that is a flagged dip, the post's measured XLA (`basis` "post")."""

    tflops: float
    xla: float
    basis: str

    @property
    def fraction(self) -> float:
        return self.tflops / self.xla


def xla_tflops(df, target, dtype, size) -> float | None:
    """This run's XLA at DEFAULT precision; None where flagged as falling with size."""
    rows = xla_default(estimates(df, target))
    rows = rows[rows.dtype == dtype]
    if "estimate_nonmonotonic" in rows:
        rows = rows[~rows.estimate_nonmonotonic.eq(True)]
    return tflops_at(rows.drop_duplicates(["m"]), size)


def post_xla_tflops(df, target, dtype, size) -> float | None:
    """The post's measured XLA (DEFAULT: its jnp.matmul sets no precision) at one size."""
    rows = df[(df.source == "published") & (df.target == target) & (df.kernel == "xla")
              & (df.dtype == dtype) & (df.m == size) & (df.status == "ok")].tflops.dropna()
    return float(rows.median()) if len(rows) else None


def versus_xla(df, target, dtype, size, tflops: float | None) -> Versus | None:
    """`tflops` against XLA at DEFAULT precision (Versus); None where neither XLA has a number."""
    if tflops is None:
        return None
    xla = xla_tflops(df, target, dtype, size)
    if xla:
        return Versus(tflops, xla, "run")
    post = post_xla_tflops(df, target, dtype, size)
    return Versus(tflops, post, "post") if post else None


def raised_limit_results(df: pd.DataFrame, target: str) -> list[dict]:
    """Configurations of the post that fail at the default limit: the smallest raised limit that fits."""
    rows = estimates(df, target)
    rows = post_configs(rows[is_pallas(rows.kernel)])
    out = []
    keys = ["experiment", "kernel", "dtype", "m", "bm", "bk", "bn"]
    for key, group in rows.groupby(keys, dropna=False):
        base = group[~group.raised_limit.astype(bool)]
        if base.empty or base.iloc[0].status != "vmem_oom":
            continue
        fits = group[group.raised_limit.astype(bool) & (group.status == "ok")].sort_values("vmem_limit_bytes")
        first = fits.iloc[0] if len(fits) else None
        out.append(dict(zip(keys, key, strict=True)) | dict(
            need_mib=float(base.iloc[0].vmem_bytes) / MiB,
            default_limit_mib=float(base.iloc[0].vmem_limit_bytes) / MiB,
            fits_at_mib=float(first.vmem_limit_bytes) / MiB if first is not None else None,
            tflops=tflops_of(first),
        ))
    return out


def tflops_of(row) -> float | None:
    """The number the experiment figures draw for a row (analysis.views.experiment_rows)."""
    if row is None:
        return None
    for column in ("model_post_tflops", "tflops"):
        value = row.get(column) if hasattr(row, "get") else getattr(row, column, None)
        if value is not None and pd.notna(value):
            return float(value)
    return None


def summary(df: pd.DataFrame, target: str) -> dict:
    """The numbers each section of the report states, for one target."""
    out = {"target": target}
    # the numbers the figures and tables beside these sentences show (one estimator per view)
    modelled = "model_post_tflops" in df and df[df.source == "estimate"].model_post_tflops.notna().any()
    best_df = df
    if modelled:
        df = df.copy()
        est = (df.source == "estimate") & df.model_post_tflops.notna()
        df.loc[est, "tflops"] = df.loc[est, "model_post_tflops"]
    out["modelled"] = bool(modelled)
    out["findings"] = claim_findings(df, target)
    best = best_vs_xla(best_df)
    if len(best):  # one estimator per row in the findings: the timing model where the table has it
        best = best[best.estimator == ("model" if (best.estimator == "model").any() else "compiler")]
    out["best"] = best[best.target == target].to_dict("records") if len(best) else []
    return out


def claim_findings(df: pd.DataFrame, target: str) -> list[dict]:
    """What the report states about each claim's configuration on `target`, in the claims' order:
    "compiles", "speed" against XLA, and for a claim about the best blocks "runs_out" and "best_found"."""
    failing = [c.blocks for c in claims.REGISTRY if c.kind == "compiles" and c.blocks is not None]
    out = []
    for c in claims.REGISTRY:
        found = dict(experiment=c.experiment, claim=c.kind, dtype=c.dtype, size=c.size, blocks=c.blocks)
        if c.kind == "compiles" and c.blocks is None:
            out.append(found | dict(finding="compiles", feasibility=feasibility(
                config_rows(df, target, c.experiment, c.dtype, c.kernel))))
        elif c.kind in ("about", "best", "near"):
            rows = config_rows(df, target, c.experiment, c.dtype, c.kernel, blocks=c.blocks)
            out.append(found | dict(finding="speed", tflops=tflops_at(rows, c.size),
                                    versus=versus_xla(df, target, c.dtype, c.size, tflops_at(rows, c.size))))
        if c.kind in ("best", "near"):
            out += [found | dict(finding="runs_out", blocks=b, feasibility=feasibility(
                config_rows(df, target, c.experiment, c.dtype, c.kernel, blocks=b))) for b in failing]
            out.append(found | dict(finding="best_found"))
    return out
