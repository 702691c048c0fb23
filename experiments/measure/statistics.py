"""Statistics of measured rows derived from their raw samples, which the table keeps: seconds,
quartiles, batched and wall medians, near_dispatch_floor (docs/outputs.md, the measured columns).
"""
import numpy as np
import pandas as pd

from tpu_matmul_repro.experiments.core.units import flops, tflops

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


def summarize_rows(samples) -> pd.DataFrame:
    """`summarize` of each row's samples, as columns: rows with the same number of samples are one
    2-D array, so a table of many rows costs a few array operations, not one call per row."""
    samples = list(samples)
    lengths = np.array([len(s) if _has(s) else 0 for s in samples], dtype=np.int64)
    out = {col: np.full(len(samples), np.nan) for col in ("seconds", "p25_seconds", "p75_seconds")}
    for length in np.unique(lengths[lengths > 0]):
        rows = np.flatnonzero(lengths == length)
        values = np.array([np.asarray(samples[i], dtype=np.float64) for i in rows])
        out["p25_seconds"][rows], out["seconds"][rows], out["p75_seconds"][rows] = np.percentile(
            values, [25, 50, 75], axis=1)
    return pd.DataFrame(dict(n_samples=lengths, **out))


def derive(measured: pd.DataFrame) -> pd.DataFrame:
    """`measured` with seconds, quartiles, n_samples, batched/wall seconds, tflops and the floor flag."""
    out = measured.copy()
    device = out["device_samples_s"] if "device_samples_s" in out else [None] * len(out)
    primary = [d if _has(d) else s for d, s in zip(device, out.samples_s, strict=True)]
    stats = summarize_rows(primary).set_index(out.index)
    for col in stats:
        out[col] = stats[col]
    out["n_samples"] = out["n_samples"].astype("Int64")
    out["batched_seconds"] = summarize_rows(out.samples_s)["seconds"].to_numpy()
    out["wall_seconds"] = summarize_rows(out.wall_samples_s)["seconds"].to_numpy()
    floor = (out["dispatch_floor_s"] if "dispatch_floor_s" in out else pd.Series(np.nan, index=out.index))
    floor = floor.astype("float64")
    near = pd.Series(out["batched_seconds"] < FLOOR_FACTOR * floor, dtype="boolean")
    out["near_dispatch_floor"] = near.mask(out["batched_seconds"].isna() | floor.isna())
    work = flops(out.m.astype("float64"), out.k.astype("float64"), out.n.astype("float64"))
    out["tflops"] = tflops(work, out["seconds"])
    return out
