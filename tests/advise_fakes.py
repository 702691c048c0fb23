"""A stand-in for the advisor's compile workers (advise/workers.py's Compiler): answers in microseconds,
with the VMEM rules the real compiler follows as the advisor's own bounds state them, and cycles no
faster than the chip's peak, so that the whole advisor runs on any input in a test. It starts no
process; `faults` makes a share of compiles fail as real ones can (a compiler error, a timeout)."""
import hashlib
import math
import time

from tpu_matmul_repro.advise.search import double_buffered_bytes
from tpu_matmul_repro.experiments.compile_study.study import single_step_axes
from tpu_matmul_repro.experiments.core.chips import chip
from tpu_matmul_repro.experiments.core.traffic import hbm_bytes, min_vmem_bytes
from tpu_matmul_repro.experiments.core.units import flops

INTERNAL_SCRATCH = 256 * 1024  # what Mosaic asks beyond the blocks' buffers (seen: 0.1 to 0.5 MiB)


class StandInCompiler:
    """Compiler's interface (tpu_compile.Compiler): compile(), close(), a context manager.

    VMEM: two buffers of every block (and the accumulator once) where every grid axis has more than
    one step, as libtpu 0.0.42.1 and 0.0.52 pipeline them; one where an axis has a single step; plus
    internal scratch. Out of VMEM above the limit asked (default: the chip's). Cycles: the MXU at its
    peak, 10 % slower, plus a fixed cost per grid step; XLA's from the same peak, at least its
    operands' bytes at the HBM bandwidth."""

    faults = 0.0  # share of compiles that fail: half compile_error, half timeout (set per test)
    delay_s = 0.0  # how long each compile takes; one longer than timeout_s times out, as a worker's does

    def __init__(self, target: str, *, profile: bool = False, timeout_s: float = 300, cache=None,
                 python=None, env=None, toolchain="", stderr=None):
        self.target, self.profile, self.timeout_s, self.cache = target, profile, timeout_s, cache
        self.asked = []

    def compile(self, case, vmem_limit_bytes=None, options=None) -> dict:
        self.asked.append((case, vmem_limit_bytes))
        c = chip(self.target)
        limit = vmem_limit_bytes or c.default_vmem_limit_bytes
        if self.delay_s:
            time.sleep(min(self.delay_s, self.timeout_s))
            if self.delay_s > self.timeout_s:
                return dict(status="timeout", vmem_bytes=None, oom_limit_bytes=None, est_cycles=None,
                            error=f"compile did not finish within timeout_s={self.timeout_s}",
                            compile_s=float(self.timeout_s), prefetched=None)
        fault = self._fault(case, vmem_limit_bytes)
        if fault:
            return dict(status=fault, vmem_bytes=None, oom_limit_bytes=None, est_cycles=None,
                        error=f"{fault} (stand-in)", compile_s=0.0, prefetched=None)
        per_cycle = c.peak_flops[case.dtype] / c.clock_hz
        if not case.facts.pallas:
            moved = hbm_bytes(case) / c.hbm_bytes_per_s * c.clock_hz
            cycles = math.ceil(max(1.1 * flops(case.m, case.k, case.n) / per_cycle, moved)) + 2000
            return dict(status="ok", vmem_bytes=None, oom_limit_bytes=None, est_cycles=cycles, error="",
                        compile_s=0.0, prefetched=None)
        single = any(single_step_axes(case))
        vmem = (min_vmem_bytes(case) if single else double_buffered_bytes(case)) + INTERNAL_SCRATCH
        if vmem > limit:
            return dict(status="vmem_oom", vmem_bytes=vmem, oom_limit_bytes=limit, est_cycles=None,
                        error="RESOURCE_EXHAUSTED: scoped VMEM limit exceeded (stand-in)", compile_s=0.0,
                        prefetched=None)
        steps = math.prod(case.grid())
        cycles = math.ceil(1.1 * flops(case.m, case.k, case.n) / per_cycle) + 300 * steps
        return dict(status="ok", vmem_bytes=vmem, oom_limit_bytes=None,
                    est_cycles=cycles if self.profile else None, error="", compile_s=0.0, prefetched=0)

    def _fault(self, case, limit) -> str:
        if not self.faults:
            return ""
        digest = hashlib.sha256(repr((case, limit, self.profile)).encode()).digest()
        draw = int.from_bytes(digest[:4], "big") / 2**32
        if draw >= self.faults:
            return ""
        return "compile_error" if draw < self.faults / 2 else "timeout"

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
