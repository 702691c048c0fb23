"""What the advisor is asked: shapes, dtype, targets and kernel, checked before any work starts."""
import dataclasses

from tpu_matmul_repro.experiments.core.chips import CHIPS
from tpu_matmul_repro.kernels import DECLARED, checks
from tpu_matmul_repro.kernels.spec import BLOCKS

MAX_DIM = 32768  # as config/schema.yaml's dim: no TPU holds larger operands


class AdviceError(ValueError):
    """A request that cannot be answered; the message is one line naming the argument and the value."""


@dataclasses.dataclass(frozen=True)
class Request:
    shapes: tuple  # ((m, k, n), ...)
    dtype: str
    targets: tuple
    kernel: str


def parse_shape(text: str) -> tuple[int, int, int]:
    """'8192x4096x14336' -> (8192, 4096, 14336); AdviceError naming the value otherwise."""
    parts = text.lower().replace("×", "x").split("x")
    if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
        raise AdviceError(f"shape {text!r}: expected MxKxN in whole numbers, e.g. 8192x4096x14336")
    shape = tuple(int(p) for p in parts)
    for dim, value in zip("mkn", shape, strict=True):
        if not 1 <= value <= MAX_DIM:
            raise AdviceError(f"shape {text!r}: {dim}={value} is not from 1 to {MAX_DIM}")
        if value % checks.LANE:
            raise AdviceError(f"shape {text!r}: {dim}={value} is not a multiple of {checks.LANE} "
                              "(the TPU lane width a blocked Pallas kernel tiles by)")
    return shape


def checked(shapes, dtype: str, targets, kernel: str) -> Request:
    if kernel not in DECLARED or DECLARED[kernel].grid != BLOCKS:
        blocked = sorted(n for n, s in DECLARED.items() if s.grid == BLOCKS)
        raise AdviceError(f"--kernel {kernel!r}: expected a blocked kernel, one of {blocked}")
    supported = DECLARED[kernel].dtypes
    if dtype not in supported:
        raise AdviceError(f"--dtype {dtype!r}: kernel {kernel} takes one of {list(supported)}")
    for target in targets:
        if target not in CHIPS:
            raise AdviceError(f"--target {target!r}: expected one of {list(CHIPS)}")
    if not shapes:
        raise AdviceError("no shape given: expected one or more MxKxN, e.g. 8192x4096x14336")
    return Request(tuple(parse_shape(s) for s in shapes), dtype, tuple(dict.fromkeys(targets)), kernel)
