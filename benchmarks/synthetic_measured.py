"""Synthetic carried measurement files for the memory benchmark: the default config's v5e sweep in the
measuring stage's own format, run after run; only the outcomes (samples around the roofline) are made up.
"""
import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from tpu_matmul_repro.experiments.core.chips import POST_CHIP, chip
from tpu_matmul_repro.experiments.core.jobs import Device, beyond_physical_vmem
from tpu_matmul_repro.experiments.core.provenance import provenance
from tpu_matmul_repro.experiments.core.schema import frame
from tpu_matmul_repro.experiments.core.traffic import hbm_bytes
from tpu_matmul_repro.experiments.core.units import flops
from tpu_matmul_repro.experiments.measure.harness import empty_result, measured_row
from tpu_matmul_repro.experiments.plan.config import checked
from tpu_matmul_repro.experiments.plan.job_lists import measure_jobs

TARGET = POST_CHIP  # as if measured on the post's chip
DEVICE = Device(TARGET, "tpu", chip(TARGET).device_kind, 1)
FOUND = dict(platform="tpu", device_kind="TPU v5 lite", count=1, num_chips=1)
CALL_OVERHEAD_S = 100e-6  # a blocked call's host round trip, as the post's timing includes


def sweep(config_path) -> list:
    """(job, case) for every configuration `config_path` would measure on a v5e."""
    config = checked(yaml.safe_load(Path(config_path).read_text()))
    config["measure"].pop("sizes", None)  # the whole compile-study sweep, as a TPU host measures it
    jobs = measure_jobs(config, DEVICE, "synthetic")
    return [(job, case) for job in jobs.values() for case in job.cases]


def _slowdown(case) -> float:
    """A fixed factor over the roofline per configuration (1.1 to 4), the same in every run."""
    digest = hashlib.sha256(repr(case).encode()).digest()
    return 1.1 + 2.9 * int.from_bytes(digest[:4], "little") / 2**32


def outcome(case) -> dict:
    """What the harness would record of `case` before its samples: vmem_oom where its blocks cannot fit
    the core's VMEM (not compiled), else ok."""
    skipped = beyond_physical_vmem(TARGET, case)
    if skipped:
        return empty_result() | skipped
    return empty_result() | dict(status="ok", rel_error=1e-3, max_tile_error=2e-3, compile_s=0.5,
                                 precision="bf16" if case.dtype == "float32" else "",
                                 timer="profiler_device_events")


def roofline_seconds(case) -> float:
    c = chip(TARGET)
    return max(float(flops(case.m, case.k, case.n)) / c.peak_flops[case.dtype],
               hbm_bytes(case) / c.hbm_bytes_per_s)


def timings(seconds: float, rng, samples: int) -> dict:
    """Raw samples of the three timers around `seconds` of device time."""
    device = seconds * np.exp(0.02 * rng.standard_normal(samples))
    wall = device + CALL_OVERHEAD_S * np.exp(0.1 * rng.standard_normal(samples))
    return dict(device_samples_s=device.tolist(), samples_s=(device + 2e-6).tolist(),
                wall_samples_s=wall.tolist(), calls_per_sample=max(1, min(100, int(0.02 / device.mean()))))


def synthetic_measured(n_rows: int, config_path="config/config.yaml", samples: int = 10,
                       seed: int = 0) -> pd.DataFrame:
    """`n_rows` measured rows: the config's v5e sweep, one run after another (run labels host<h>-day<d>,
    six hours apart), the last run cut short at `n_rows`. Each configuration's row is the harness's
    `measured_row`, built once; a run adds its label, dispatch floor and samples."""
    rng = np.random.default_rng(seed)
    configurations = sweep(config_path)
    rows = [measured_row(job, case, outcome(case), None, FOUND) for job, case in configurations]
    seconds = [roofline_seconds(case) * _slowdown(case) for _, case in configurations]
    out, timestamps = [], []
    start = pd.Timestamp("2026-01-01T00:00:00+00:00")
    for run in range(-(-n_rows // len(rows))):
        label = f"host{run % 4}-day{run // 4:04d}"
        floor = 1.5e-6 * float(np.exp(0.05 * rng.standard_normal()))
        noise = float(np.exp(0.03 * rng.standard_normal()))  # a run's own speed
        for row, t in list(zip(rows, seconds, strict=True))[: n_rows - len(out)]:
            ok = row["status"] == "ok"
            out.append(row | dict(run_label=label, dispatch_floor_s=floor)
                       | (timings(t * noise, rng, samples) if ok else {}))
        timestamps += [(start + pd.Timedelta(hours=6 * run)).isoformat(timespec="seconds")] * (
            len(out) - len(timestamps))
    df = frame(out, provenance())
    df["timestamp"] = timestamps
    return df


def write_synthetic(path, n_rows: int, **kwargs) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    synthetic_measured(n_rows, **kwargs).to_parquet(path, index=False)
    return path
