"""Statistics of measured rows, derived from their raw samples (kept in the table, like asv does).

seconds = median of the row's primary samples: `device_samples_s` (the kernel's device time from
profiler events) where the row has them (timer = profiler_device_events), else `samples_s` (batched
asynchronous calls; timer = batched_async_calls), with p25_seconds, p75_seconds and n_samples of the
same samples; batched_seconds = median of `samples_s`; wall_seconds = median of `wall_samples_s`
(single blocked calls, the post's method); tflops = FLOPs / seconds.

near_dispatch_floor: batched_seconds is under FLOOR_FACTOR times the run's dispatch floor (the
batched timer's time per call on a trivial op): that timer measured Python dispatch, not the kernel,
and batched_seconds (and seconds, where it comes from it) must not be read as device time.
Rows without samples (failures, wrong results) get none of these.
"""
import numpy as np
import pandas as pd

from experiments.core.units import flops

FLOOR_FACTOR = 2.0


def summarize(samples) -> dict:
    """Median, quartiles and count of a list of seconds; empty or missing -> n = 0 and NaNs."""
    values = np.asarray(samples if _has(samples) else [], dtype=np.float64)
    if values.size == 0:
        return dict(n_samples=0, seconds=np.nan, p25_seconds=np.nan, p75_seconds=np.nan)
    p25, median, p75 = np.percentile(values, [25, 50, 75])
    return dict(n_samples=int(values.size), seconds=float(median), p25_seconds=float(p25),
                p75_seconds=float(p75))


def _has(samples) -> bool:
    """A non-empty list of samples (a missing column reads as None or NaN)."""
    return samples is not None and not isinstance(samples, float) and len(samples) > 0


def derive(measured: pd.DataFrame) -> pd.DataFrame:
    """`measured` with seconds, quartiles, n_samples, batched/wall seconds, tflops and the floor flag."""
    out = measured.copy()
    device = out["device_samples_s"] if "device_samples_s" in out else [None] * len(out)
    primary = [d if _has(d) else s for d, s in zip(device, out.samples_s, strict=True)]
    stats = pd.DataFrame([summarize(s) for s in primary], index=out.index)
    for col in stats:
        out[col] = stats[col]
    out["n_samples"] = out["n_samples"].astype("Int64")
    out["batched_seconds"] = [summarize(s)["seconds"] for s in out.samples_s]
    out["wall_seconds"] = [summarize(s)["seconds"] for s in out.wall_samples_s]
    floor = (out["dispatch_floor_s"] if "dispatch_floor_s" in out else pd.Series(np.nan, index=out.index))
    floor = floor.astype("float64")
    near = pd.Series(out["batched_seconds"] < FLOOR_FACTOR * floor, dtype="boolean")
    out["near_dispatch_floor"] = near.mask(out["batched_seconds"].isna() | floor.isna())
    work = flops(out.m.astype("float64"), out.k.astype("float64"), out.n.astype("float64"))
    out["tflops"] = work / out["seconds"] / 1e12
    return out
