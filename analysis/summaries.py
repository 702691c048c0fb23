"""Summaries of the tidy table: the best kernel against XLA, how each target's estimates were made, and
the row filters the stages share."""
import numpy as np
import pandas as pd

from tpu_matmul_repro.kernels import is_pallas


def blocks_text(bm, bk, bn, sep: str = ", ") -> str:
    """Blocks as the claims, tables and advice name them: "(512, 1024, 1024)". Not in cases.py, whose
    every edit would miss the whole compile cache (its key holds the compile worker's imports)."""
    return "(" + sep.join(str(int(b)) for b in (bm, bk, bn)) + ")"

MATCH = ["experiment", "kernel", "dtype", "m", "k", "n", "bm", "bk", "bn"]
SUMMARY_SIZES = (2048, 4096, 8192)
# No rank correlation on fewer points: with 3 or 4 any order is a coin toss.
MIN_RANK_POINTS = 5
def default_limit(df: pd.DataFrame) -> pd.DataFrame:
    """Rows compiled at the chip's default scoped-VMEM limit (not the raised-limit retries)."""
    return df[~df.raised_limit.eq(True)]


def post_configs(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of the post's own configurations (not the wider block search)."""
    return df[~df.search.eq(True)] if "search" in df else df


# XLA's matmul at precision=HIGHEST (kernels/xla_highest.py): best-vs-XLA's like-for-like float32 column
HIGHEST_KERNEL = "xla_highest"
# The precision each dot runs at: neither the kernels' `a_ref[...] @ b_ref[...]` nor jnp.matmul sets
# one, which Mosaic and XLA run as Precision.DEFAULT (docs/timing-model.md).
PALLAS_PRECISION = XLA_PRECISION = "DEFAULT"

ESTIMATORS = {  # estimator -> (TFLOP/s column, what it is); both sides of a fraction use the same one
    "compiler": ("tflops", "libtpu's estimate: static profile (Pallas) vs XLA's cost model, bounded by HBM"),
    "model": ("model_device_tflops", "timing model, device time, Pallas and XLA alike"),
}


def best_vs_xla(df: pd.DataFrame, sizes=SUMMARY_SIZES) -> pd.DataFrame:
    """Per target, dtype, size and estimator: the best Pallas configuration as a fraction of XLA by the
    same estimator (none against a flagged XLA dip), of the post's measured XLA and of XLA at HIGHEST."""
    est = default_limit(df[(df.source == "estimate") & (df.status == "ok") & df.m.isin(sizes)])
    published = df[(df.source == "published") & (df.kernel == "xla") & (df.status == "ok")]
    rows = []
    for (target, dtype, size), group in est.groupby(["target", "dtype", "m"]):
        post_xla = published[(published.target == target) & (published.dtype == dtype)
                             & (published.m == size)]
        post_xla = float(post_xla.tflops.median()) if len(post_xla) else np.nan
        xla_rows, highest_rows = group[group.kernel == "xla"], group[group.kernel == HIGHEST_KERNEL]
        flagged, highest_flagged = _flagged(xla_rows), _flagged(highest_rows)
        for estimator, (column, description) in ESTIMATORS.items():
            if column not in group:
                continue
            pallas = group[is_pallas(group.kernel)].dropna(subset=[column])
            xla = xla_rows[column].dropna()
            if pallas.empty or xla.empty:
                continue
            best = pallas.loc[pallas[column].idxmax()]
            xla_tflops = float(xla.iloc[0])
            highest = highest_rows[column].dropna()
            highest = float(highest.iloc[0]) if len(highest) else np.nan
            post_method = best.get("model_post_tflops", np.nan) if estimator == "model" else np.nan
            rows.append(dict(target=target, dtype=dtype, size=size, estimator=estimator,
                             estimator_is=description, experiment=best.experiment, kernel=best.kernel,
                             bm=best.bm, bk=best.bk, bn=best.bn,
                             best_tflops=float(best[column]), xla_tflops=xla_tflops, xla_flagged=flagged,
                             fraction_of_xla=np.nan if flagged else float(best[column]) / xla_tflops,
                             best_post_method_tflops=post_method, post_xla_tflops=post_xla,
                             fraction_of_post_xla=post_method / post_xla,
                             configurations=len(pallas.drop_duplicates(["kernel", "bm", "bk", "bn"])),
                             pallas_precision=PALLAS_PRECISION, xla_precision=XLA_PRECISION,
                             xla_highest_tflops=highest, xla_highest_flagged=highest_flagged,
                             fraction_of_xla_highest=np.nan if highest_flagged
                             else float(best[column]) / highest))
    return pd.DataFrame(rows)


def _flagged(xla_rows: pd.DataFrame) -> bool:
    return bool(xla_rows.get("estimate_nonmonotonic", pd.Series(dtype=bool)).eq(True).any())


def estimate_methods(df: pd.DataFrame) -> pd.DataFrame:
    """Per target, how the estimates of the post's Pallas configurations at the default limit were
    obtained: toolchain, libtpu, cycles or why none, out of VMEM; and XLA's cost-model estimates."""
    from tpu_matmul_repro.experiments.core.chips import generation_order

    est = post_configs(default_limit(df[df.source == "estimate"]))
    rows = []
    for target in sorted(set(est.target), key=generation_order):
        mine = est[est.target == target]
        pallas = mine[is_pallas(mine.kernel)].drop_duplicates(MATCH[1:])
        ok = pallas[pallas.status == "ok"]
        cycles = ok.tflops.notna()
        bare = ok[~cycles]
        xla = mine[~is_pallas(mine.kernel) & (mine.status == "ok")]
        rows.append(dict(
            target=target, toolchain=", ".join(sorted(set(mine.toolchain.dropna()))),
            libtpu=", ".join(sorted(set(mine.libtpu_version.dropna()))),
            configurations=len(pallas), compiler_cycles=int(cycles.sum()),
            no_number=len(bare),
            no_cycles_because=", ".join(sorted(set(bare.cycles_method.dropna()) - {""})),
            out_of_vmem=int((pallas.status == "vmem_oom").sum()),
            other_failures=int((~pallas.status.isin(["ok", "vmem_oom"])).sum()),
            xla_cost_model=int(xla.tflops.notna().sum()), xla_sizes=len(xla)))
    return pd.DataFrame(rows)
