"""Where the project keeps what it can rebuild: outside results/. No pandas here (other toolchains'
compile workers import it); the caches read their variable here so compile-code edits rerun no other job.
"""
import os
from pathlib import Path

# Names the compile cache's folder; the output cache is its outputs/ subfolder; "off" turns both off.
CACHE_VARIABLE = "TPU_MATMUL_REPRO_CACHE"
OFF_VALUES = ("", "off", "0", "false", "no")


def user_cache(name: str) -> Path:
    """$XDG_CACHE_HOME/tpu-matmul-repro/<name>, ~/.cache/tpu-matmul-repro/<name> by default."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tpu-matmul-repro" / name


def cache_folder(name: str) -> Path | None:
    """The folder of the `name` cache under $TPU_MATMUL_REPRO_CACHE, else user_cache(name); None when off."""
    configured = os.environ.get(CACHE_VARIABLE)
    if configured is None:
        return user_cache(name)
    if configured.strip().lower() in OFF_VALUES:
        return None
    # the compile cache predates the output cache and keeps the variable's folder as its own
    return Path(configured) if name == "compile" else Path(configured) / name
