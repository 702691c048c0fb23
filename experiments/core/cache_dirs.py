"""Where the project keeps what it can rebuild but would rather not: outside results/, so deleting
results/ (or a second checkout) reuses it. No pandas here: compile workers of other toolchains use it."""
import os
from pathlib import Path


def user_cache(name: str) -> Path:
    """$XDG_CACHE_HOME/tpu-matmul-repro/<name>, ~/.cache/tpu-matmul-repro/<name> by default."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tpu-matmul-repro" / name
