"""What the advisor is asked: shapes, dtype, targets, kernel and scoped-VMEM limit, checked before any
work starts. Every refusal is one line naming the argument and the value."""
import dataclasses
import math
import re

from tpu_matmul_repro.experiments.core.chips import CHIPS, chip
from tpu_matmul_repro.experiments.core.traffic import hbm_problem
from tpu_matmul_repro.experiments.core.traffic import matmul_bytes as operand_bytes  # noqa: F401
from tpu_matmul_repro.experiments.core.units import MiB
from tpu_matmul_repro.kernels import DECLARED
from tpu_matmul_repro.kernels.spec import BLOCKS

GiB = 1024 * MiB
DIGITS = re.compile(r"[0-9]+")  # ASCII digits only: str.isdigit() also takes '²' and '٣'
SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*(MiB|GiB|KiB|M|G|K|B)?", re.IGNORECASE)
UNITS = {"b": 1, "k": 1024, "kib": 1024, "m": MiB, "mib": MiB, "g": GiB, "gib": GiB}


class AdviceError(ValueError):
    """A request that cannot be answered; the message is one line naming the argument and the value."""


@dataclasses.dataclass(frozen=True)
class Request:
    shapes: tuple  # ((m, k, n), ...)
    dtype: str
    targets: tuple
    kernel: str
    vmem_limit_bytes: int | None = None  # None: each target's default scoped limit


def parse_shape(text: str) -> tuple[int, int, int]:
    """'8192x4096x14336' -> (8192, 4096, 14336); AdviceError naming the value otherwise."""
    parts = text.strip().lower().replace("×", "x").split("x")
    if len(parts) != 3:
        raise AdviceError(f"shape {text!r}: expected MxKxN, three whole numbers joined by x, "
                          "e.g. 8192x4096x14336")
    for dim, part in zip("mkn", parts, strict=True):
        if part.startswith("-") and DIGITS.fullmatch(part[1:]):
            raise AdviceError(f"shape {text!r}: {dim}={part} is negative: each dimension is a whole "
                              "number from 1")
        if not DIGITS.fullmatch(part):
            raise AdviceError(f"shape {text!r}: {dim}={part!r} is not a whole number in the digits 0-9")
    shape = tuple(int(p) for p in parts)
    for dim, value in zip("mkn", shape, strict=True):
        if value < 1:
            raise AdviceError(f"shape {text!r}: {dim}={value}: each dimension is a whole number from 1")
    return shape


def check_fits_hbm(shape, dtype: str, target: str) -> None:
    """A matmul whose operands and output do not fit in the target's HBM cannot run on it at all (the
    one bound on a shape: the config's advice.shapes has it too, experiments/plan/config.py)."""
    why = hbm_problem(shape, dtype, target)
    if why:
        m, k, n = shape
        raise AdviceError(f"shape {m}x{k}x{n}: {why}")


def parse_vmem_limit(text: str) -> int:
    """'32MiB', '32M', '33554432' -> bytes; AdviceError naming the value otherwise."""
    found = SIZE.fullmatch(str(text).strip())
    if not found:
        raise AdviceError(f"--vmem-limit {text!r}: expected a size such as 32MiB, 48M or 33554432 (bytes)")
    number, unit = float(found.group(1)), (found.group(2) or "b").lower()
    value = number * UNITS[unit]
    if value < 1:
        raise AdviceError(f"--vmem-limit {text!r}: a limit of nothing: give a size such as 32MiB")
    if not value.is_integer():
        raise AdviceError(f"--vmem-limit {text!r}: not a whole number of bytes")
    return int(value)


def check_vmem_limit(limit: int | None, target: str, label: str = "--vmem-limit") -> None:
    """A limit from the chip's default scoped limit up to its physical VMEM: below the default, the
    default-limit compiles the study shares would not answer the question; above VMEM, nothing fits."""
    if limit is None:
        return
    c = chip(target)
    if limit % MiB:
        raise AdviceError(f"{label} {limit} bytes: not a whole number of MiB (as the compile study's "
                          f"limits are; e.g. {-(-limit // MiB)}MiB)")
    if limit > c.vmem_bytes:
        raise AdviceError(f"{label} {limit / MiB:g} MiB: more than {target}'s physical VMEM of "
                          f"{c.vmem_bytes / MiB:.0f} MiB per core")
    if limit < c.default_vmem_limit_bytes:
        raise AdviceError(f"{label} {limit / MiB:g} MiB: below {target}'s default scoped limit of "
                          f"{c.default_vmem_limit_bytes / MiB:.0f} MiB (the advisor ranks at the default "
                          "limit or above)")


def checked(shapes, dtype: str, targets, kernel: str, vmem_limit_bytes: int | None = None) -> Request:
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
    parsed = tuple(dict.fromkeys(s if isinstance(s, tuple) else parse_shape(s) for s in shapes))  # once
    targets = tuple(dict.fromkeys(targets))
    for target in targets:
        check_vmem_limit(vmem_limit_bytes, target)
        for shape in parsed:
            check_fits_hbm(shape, dtype, target)
    return Request(parsed, dtype, targets, kernel, vmem_limit_bytes)


def padded(dim: int, edge: int) -> int:
    """The dimension rounded up to a whole number of blocks."""
    return math.ceil(dim / edge) * edge
