"""What the studies that compare toolchains (then_and_now, history) share: the names and errors with
which they quote the post's configurations."""
import re

from tpu_matmul_repro.experiments.core.cases import config_label


def short_error(error: str) -> str:
    """The compiler's sizes for an out-of-VMEM error, else its first line (the rest is the kernel)."""
    found = re.search(r"Scoped allocation with size \S+ and limit \S+", error)
    return found.group(0) if found else (error.splitlines()[0][:300] if error else "")


def config_name(experiment: str, kernel: str, dtype: str, m: int, bm, bk, bn) -> str:
    """e.g. "v2 N = 4, 2048" or "v4 (512, 1024, 1024) bfloat16, 2048": a post configuration as the
    studies' figures name it."""
    blocks = config_label(kernel, m, bm, bk, bn)
    words = [experiment, blocks, "" if dtype == "float32" else dtype]
    return f"{' '.join(w for w in words if w)}, {int(m)}"
