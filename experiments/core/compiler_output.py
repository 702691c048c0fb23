"""Parsers for what libtpu's compiler reports: VMEM used, estimated cycles, out-of-VMEM errors.

None of these formats is documented or stable (seen with libtpu 0.0.42.1). Each parser fails with a
FormatChanged error that says what it expected, never with a silent NaN.
"""
import json
import os
import re
from pathlib import Path

VMEM_MEMORY_SPACE = "1"  # memory_space "1" is VMEM in used_scoped_memory_configs
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}

_USED_SCOPED = re.compile(r'"used_scoped_memory_configs":(\[[^\]]*\])')
_BUNDLE_CYCLES = re.compile(r'"bundle_analysis_data":\{[^{}]*?"estimated_cycles":"(\d+)"')
_CYCLES = re.compile(r'"estimated_cycles":"(\d+)"')
# Two forms: over the scoped-VMEM limit, and over the core's physical VMEM.
_OOM_SIZES = (
    re.compile(r"Scoped allocation with size ([\d.]+)([KMG]?) and limit ([\d.]+)([KMG]?)"),
    re.compile(r"Ran out of memory in memory space vmem\. Used ([\d.]+)([KMG]?) of ([\d.]+)([KMG]?) vmem"),
)
# Older compilers quote the failing custom call whole: its Mosaic module as kilobytes of base64 (in
# whatever quoting) and the kernel's absolute source path (see readable_error).
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/=]{200,}")
_CHECKOUT = Path(__file__).resolve().parents[2]
# A module's path is the checkout's, or the installed package's link to it (tpu_matmul_repro/kernels/...);
# the longer first: one may contain the other.
_CHECKOUT_SPELLINGS = sorted({f"{c}/{p}" for c in (os.path.abspath(_CHECKOUT), _CHECKOUT.resolve())
                              for p in ("tpu_matmul_repro/", "")}, key=len, reverse=True)
ERROR_CHARS = 1000  # what a row keeps of an error message


class FormatChanged(RuntimeError):
    """The compiler's output no longer looks as this parser expects (likely a new libtpu)."""


def vmem_bytes_used(hlo_text: str) -> int:
    """Scoped VMEM bytes a compiled Pallas kernel uses, from its tpu_custom_call backend_config."""
    configs = _USED_SCOPED.findall(hlo_text)
    if not configs:
        raise FormatChanged('expected "used_scoped_memory_configs":[...] in the compiled HLO of a Pallas '
                            "kernel (tpu_custom_call backend_config); libtpu's output format changed")
    total = 0
    for config in configs:
        try:
            entries = json.loads(config)
            total += sum(int(e["size"]) for e in entries if str(e["memory_space"]) == VMEM_MEMORY_SPACE)
        except (ValueError, KeyError, TypeError) as e:
            raise FormatChanged(f"used_scoped_memory_configs={config!r}: expected a JSON list of "
                                f'{{"memory_space", "size"}} objects ({e})') from None
    return total


def pallas_estimated_cycles(hlo_text: str) -> int:
    """Cycles libtpu's static profile estimates for a Pallas kernel (needs the profile flag)."""
    found = _BUNDLE_CYCLES.findall(hlo_text)
    if not found:
        raise FormatChanged('expected "bundle_analysis_data":{"estimated_cycles":"N"} in the compiled HLO; '
                            "was libtpu started with --xla_jf_dump_static_llo_profile_to, and did its "
                            "output format change?")
    return sum(int(c) for c in found)


_KERNEL_OPERANDS = re.compile(r"custom-call\(([^)]*)\)[^\n]*custom_call_target=\"tpu_custom_call\"")


def prefetched_operands(hlo_text: str) -> int:
    """How many of the Pallas kernel's operands XLA's memory-space assignment copies into another
    memory space before the kernel (a copy-done among the tpu_custom_call's operands). On 7x it
    prefetches operands that fit into VMEM, and libtpu's profile of the kernel then counts other
    cycles (docs/compile-study.md)."""
    found = _KERNEL_OPERANDS.findall(hlo_text)
    if not found:
        raise FormatChanged("expected a tpu_custom_call in the compiled HLO; libtpu's output format changed")
    operands = [operand.strip() for listed in found for operand in listed.split(",")]
    return sum(operand.startswith("%copy-done") for operand in operands)


def xla_estimated_cycles(hlo_text: str) -> int:
    """Cycles XLA's cost model estimates for a compiled XLA program: the sum over its fusions."""
    found = _CYCLES.findall(hlo_text)
    if not found:
        raise FormatChanged('expected "estimated_cycles":"N" in the backend_config of the compiled '
                            "HLO's fusions; libtpu's output format changed")
    return sum(int(c) for c in found)


def is_vmem_oom(message: str) -> bool:
    return "RESOURCE_EXHAUSTED" in message and (
        "CompileTimeScopedVmemOom" in message or "Ran out of memory in memory space vmem" in message)


def vmem_oom_sizes(message: str) -> tuple[int, int]:
    """(requested, limit) bytes from an out-of-VMEM error, to the message's precision.

    Over the scoped limit: "Scoped allocation with size 48.82M and limit 16.00M"; over the physical
    VMEM: "Ran out of memory in memory space vmem. Used 195.84M of 127.94M vmem" (the limit is then
    the core's VMEM). Both round to two decimals of MiB.
    """
    match = next((m for m in (p.search(message) for p in _OOM_SIZES) if m), None)
    if not match:
        raise FormatChanged("expected 'Scoped allocation with size <N>M and limit <N>M' or 'Ran out of "
                            "memory in memory space vmem. Used <N>M of <N>M vmem' in the out-of-VMEM "
                            f"error, got: {message[:300]!r}")
    size, size_unit, limit, limit_unit = match.groups()
    return round(float(size) * _UNITS[size_unit]), round(float(limit) * _UNITS[limit_unit])


_SOURCE_LINE = re.compile(r" source_line=\d+")


def readable_error(message: str) -> str:
    """An error message as a row keeps it: the base64 of a quoted Mosaic module elided, so that the
    sentence after it (jax 0.4's "Scoped allocation with size 48.82M and limit 16.00M ...") fits in
    ERROR_CHARS, and paths in this checkout relative (as imported and as resolved), so that the row
    (and a compile cache entry reused by another checkout) does not depend on where the repository
    lies. The source line the compiler quotes for the kernel's pallas_call is dropped too: it moves
    with any edit above it, and a cached compile (whose key ignores comments and layout) would keep
    the old one."""
    message = _SOURCE_LINE.sub("", _BASE64_RUN.sub("…", message))
    for checkout in _CHECKOUT_SPELLINGS:
        message = message.replace(checkout, "")
    return message[:ERROR_CHARS]


def compile_failure(error: Exception) -> dict:
    """The row fields of a failed compile: status vmem_oom (with the compiler's sizes) or compile_error."""
    message = str(error)
    failure = dict(status="compile_error", vmem_bytes=None, oom_limit_bytes=None,
                   error=readable_error(f"{type(error).__name__}: {message}"))
    if is_vmem_oom(message):
        failure["status"] = "vmem_oom"
        failure["vmem_bytes"], failure["oom_limit_bytes"] = vmem_oom_sizes(message)
    return failure
