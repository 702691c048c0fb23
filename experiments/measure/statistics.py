"""Statistics of measured rows, derived from their raw samples (kept in the table, like asv does).

seconds = median of `samples_s` (device time per call, batched asynchronous calls), with p25_seconds
and p75_seconds; wall_seconds = median of `wall_samples_s` (single blocked calls, the post's method);
tflops = FLOPs / seconds. Rows without samples (failures, wrong results) get none of these.
"""
import numpy as np
import pandas as pd

from experiments.core.units import flops


def summarize(samples) -> dict:
    """Median, quartiles and count of a list of seconds; empty or missing -> n = 0 and NaNs."""
    values = np.asarray([] if samples is None else samples, dtype=np.float64)
    if values.size == 0:
        return dict(n_samples=0, seconds=np.nan, p25_seconds=np.nan, p75_seconds=np.nan)
    p25, median, p75 = np.percentile(values, [25, 50, 75])
    return dict(n_samples=int(values.size), seconds=float(median), p25_seconds=float(p25),
                p75_seconds=float(p75))


def derive(measured: pd.DataFrame) -> pd.DataFrame:
    """`measured` with seconds, quartiles, n_samples, wall_seconds and tflops from its raw samples."""
    out = measured.copy()
    stats = pd.DataFrame([summarize(s) for s in out.samples_s], index=out.index)
    for col in stats:
        out[col] = stats[col]
    out["n_samples"] = out["n_samples"].astype("Int64")
    out["wall_seconds"] = [summarize(s)["seconds"] for s in out.wall_samples_s]
    work = flops(out.m.astype("float64"), out.k.astype("float64"), out.n.astype("float64"))
    out["tflops"] = work / out["seconds"] / 1e12
    return out
