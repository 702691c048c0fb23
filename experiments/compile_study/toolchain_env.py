"""Virtual environments for toolchains, made with venv and pip only, once per toolchain and set of pins
in the cache folder; built only once its manifest exists, a lock serialising builders (docs/toolchains.md).
"""
import datetime
import fcntl
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tpu_matmul_repro.experiments.core.atomic_write import write_text_atomic
from tpu_matmul_repro.experiments.core.jobs import Toolchain

MANIFEST = "toolchain.json"
VERSION_PACKAGES = ("jax", "jaxlib", "libtpu")  # recorded on every estimate row
INSTALL_TIMEOUT_S = 1800
BUILT = "built_now"  # the key `ensure` adds to the manifest it returns: True if it built it just now


class ToolchainInstallError(RuntimeError):
    """A toolchain's environment could not be made; the message names the toolchain and says why."""


def python_of(path: Path) -> Path:
    return path / "bin" / "python"


def read_manifest(path: Path) -> dict | None:
    """The manifest of a complete environment at `path`, or None (absent, half-built or moved)."""
    try:
        manifest = json.loads((path / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return manifest if Path(manifest.get("python", "")).exists() else None


def ensure(toolchain: Toolchain, path: Path, *, pip_args=(), log=None) -> dict:
    """The toolchain's environment at `path`, built first if needed; its manifest, with BUILT True if
    this call built it. ToolchainInstallError naming the toolchain when venv or pip fail."""
    if toolchain.pipeline:
        raise ValueError(f"toolchain {toolchain.name!r} is the pipeline's own environment: nothing to build")
    path = Path(path)
    manifest = read_manifest(path)
    if manifest:
        return {**manifest, BUILT: False}
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f"{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it: wait, then use its result
        manifest = read_manifest(path)
        if manifest:
            return {**manifest, BUILT: False}
        if path.exists():  # a build that did not finish
            shutil.rmtree(path)
        try:
            return {**_build(toolchain, path, pip_args, log), BUILT: True}
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)
            raise


def built_or_reused(manifest: dict) -> str:
    """One line for the run's console: the environment `ensure` returned, built by this run (and in how
    long) or one built before, reused."""
    name, path = manifest["toolchain"], manifest["path"]
    if manifest.get(BUILT):
        return (f"toolchain {name}: environment built in {manifest['build_s']:.0f} s at {path} (once per "
                f"machine: later runs and clean clones reuse it)")
    when = f", built {manifest['built_at']}" if manifest.get("built_at") else ""
    return f"toolchain {name}: environment reused from {path}{when}"


def _run(toolchain: Toolchain, what: str, cmd: list[str], log) -> str:
    if log:
        log.info("toolchain %s: %s", toolchain.name, " ".join(cmd))
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ToolchainInstallError(f"toolchain {toolchain.describe()}: {what} did not finish within "
                                    f"{INSTALL_TIMEOUT_S} s") from None
    if done.returncode:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-6:])
        raise ToolchainInstallError(f"toolchain {toolchain.describe()}: {what} failed "
                                    f"(exit {done.returncode}):\n{tail}")
    return done.stdout


def _build(toolchain: Toolchain, path: Path, pip_args, log) -> dict:
    start = time.monotonic()
    _run(toolchain, "creating its virtual environment", [sys.executable, "-m", "venv", str(path)], log)
    python = str(python_of(path))
    _run(toolchain, "pip install", [python, "-m", "pip", "install", "--disable-pip-version-check",
                                    "--no-input", *pip_args, *toolchain.requirements()], log)
    # Importing jax checks the install (a wheel for another platform, a broken dependency) now, with
    # the toolchain's name in the message, rather than in every compile job.
    script = ("import importlib.metadata as m, json, jax, jaxlib; "
              f"print(json.dumps({{p: m.version(p) for p in {VERSION_PACKAGES!r}}}))")
    versions = json.loads(
        _run(toolchain, "importing jax", [python, "-c", script], log).strip().splitlines()[-1])
    freeze = _run(toolchain, "pip freeze", [python, "-m", "pip", "freeze", "--disable-pip-version-check"],
                  log)
    for package, version in toolchain.pins:
        if package in versions and versions[package] != version:
            raise ToolchainInstallError(f"toolchain {toolchain.describe()}: pip installed {package} "
                                        f"{versions[package]}, not {version}")
    manifest = dict(toolchain=toolchain.name, pins=dict(toolchain.pins), path=str(path), python=python,
                    hash=toolchain.pins_hash(), versions=versions, freeze=freeze.split(),
                    built_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                    build_s=round(time.monotonic() - start, 1))
    write_text_atomic(json.dumps(manifest, indent=1), path / MANIFEST)  # last: the environment is complete
    return manifest
