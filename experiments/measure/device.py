"""Which device this run measures on, if any: a TPU found by `jax.devices()` in a child process (only
where TPU hardware is visible), the CPU on request, or none; decided once and cached in the environment.
"""
import glob
import json
import os
import re
import socket
import subprocess
import sys

from tpu_matmul_repro.experiments.core.chips import CHIPS, chip_version, target_for_device_kind  # noqa: F401
from tpu_matmul_repro.experiments.core.jobs import Device

SETTINGS = ("auto", "cpu", "off")
CACHE_VARIABLE = "TPU_MATMUL_REPRO_DEVICE"
PROBE = ("import json, jax; d = jax.devices(); "
         "c = {(x.process_index, tuple(x.coords)) for x in d if getattr(x, 'coords', None) is not None}; "
         "print(json.dumps(dict(platform=d[0].platform, device_kind=d[0].device_kind, count=len(d), "
         "coords=len(c))))")


def count_chips(device_kind: str, devices: int, distinct_coords: int | None = None) -> int:
    """Chips behind `devices` JAX devices: one device per chip but on 7x (one per TensorCore); devices on
    one chip share their coordinates, so their count is the answer where known."""
    if distinct_coords:
        return distinct_coords
    version = chip_version(device_kind)
    if version is None or version.supports_megacore:
        return devices
    return max(devices // version.num_physical_tensor_cores_per_chip, 1)


def tpu_hardware_visible() -> bool:
    return bool(glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*"))


def probe() -> dict:
    """`jax.devices()` of a fresh process: platform, device kind and count of the default backend."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"probing jax.devices() failed (exit {out.returncode}):\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def from_probe(found: dict) -> Device | None:
    if found["platform"] != "tpu":
        return None
    chips = count_chips(found["device_kind"], found["count"], found.get("coords"))
    return Device(target_for_device_kind(found["device_kind"]), "tpu", found["device_kind"], chips)


def detect(setting: str, *, hardware=tpu_hardware_visible, probe=probe) -> Device | None:
    """The device to measure on for the config's `measure.device` setting, or None (estimates only)."""
    if setting not in SETTINGS:
        raise ValueError(f"measure.device={setting!r}; expected one of {SETTINGS}")
    if setting == "off":
        return None
    if setting == "cpu":
        return Device("cpu", "cpu", "cpu", 1)
    cached = os.environ.get(CACHE_VARIABLE)
    if cached is not None:
        return Device(**json.loads(cached)) if cached else None
    device = from_probe(probe()) if hardware() else None
    os.environ[CACHE_VARIABLE] = device.to_json() if device else ""
    return device


def measured_or_error(files: list, setting: str) -> list:
    """The measurement files of the `measure` target, or an error saying why there are none."""
    if not files and setting == "off":
        raise ValueError("measure: measure.device is off, so there is nothing to measure; set it to auto "
                         "(a TPU, where one is found) or cpu (to try the harness)")
    if not files:
        raise ValueError(f"measure: no TPU found here (measure.device={setting}), so there is nothing to "
                         "measure; "
                         "on a TPU VM check that jax.devices() lists TPUs, or set measure.device: cpu to try "
                         "the harness")
    return files


def host_label() -> str:
    """This host's name, file-name safe: the default label of its measurements."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", socket.gethostname()).strip("-.") or "host"
