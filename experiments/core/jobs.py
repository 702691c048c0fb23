"""What planning hands to the stages: the job, toolchain and device types and the rules every stage
applies to a case alike; below the stages, so no stage imports the planner (tests/test_structure.py).
"""
import dataclasses
import hashlib
import json
import sys

from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.chips import Chip, chip
from tpu_matmul_repro.experiments.core.traffic import min_vmem_bytes
from tpu_matmul_repro.experiments.core.traffic_cache import cached_hbm_bytes
from tpu_matmul_repro.experiments.core.units import TERA, MiB, flops, tflops


@dataclasses.dataclass(frozen=True)
class Job:
    """Cases of one experiment for one target (one dtype, but for XLA's merged baseline) and how to
    compile them; a Snakemake job runs one Job, or several of one target with shared workers (run_jobs)."""

    target: str
    experiment: str
    cases: tuple  # Case, compiled at the default limit
    timeout_s: float  # per compile
    profile_max_steps: int  # with static_profile, larger grids are compiled plainly: no Pallas cycles
    raise_limits_for: tuple = ()  # the experiment's own cases (the rest come from its block search);
    # compiled again at raised limits if they run out of VMEM
    raised_limits_mib: tuple = ()
    toolchain: str = "current"  # experiments/plan/toolchains.py; rows carry it
    static_profile: bool = False  # True: compile Pallas kernels with libtpu's static profile (cycles)
    # searched blocks dominated by ones out of VMEM: not compiled (dominated_result). Off unless the
    # config asks (compile_study.skip_dominated): the release history, whose cases are all "searched"
    # (no raised-limit retries), needs every requested size it compares.
    skip_dominated: bool = False
    # the scoped-VMEM limit (MiB) the cases are compiled at first; None: the chip's default. The
    # advisor's --vmem-limit, for blocks whose own buffers exceed the default (sure to run out there).
    limit_mib: int | None = None
    # a block grid's VMEM verdict from its two-step grid (compile_study.study.two_step_grid): the
    # advisor's, for the toolchains where that is checked to equal the full size's (TWO_STEP_VMEM)
    two_step_vmem: bool = False


@dataclasses.dataclass(frozen=True)
class Device:
    """A device this run measures on (experiments/measure/device.py detects it)."""

    name: str  # the target name of a known TPU generation (v5e, ...), else a slug; "cpu"
    platform: str  # "tpu" or "cpu"
    device_kind: str
    num_chips: int

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))


@dataclasses.dataclass(frozen=True)
class Settings:
    """How to measure: the config's `measure` section (job_lists.measure_settings)."""

    warmup: int
    samples: int
    input_sets: int
    min_sample_s: float
    max_calls: int
    # Largest per-tile error (experiments/measure/output_check.py) of a correct result. Measured bands on
    # random normal operands: one bf16 pass 2.4e-3, bf16 output rounding 1.7e-3; a wrong tile ~1.
    tolerance: tuple
    timeout_s: float  # per configuration (compile, check and timing), in its worker
    profile: bool  # device time from the profiler (else only the batched and blocked timers)
    max_batch_bytes: int = 2 * 1024 * MiB  # outputs alive at once in a batch (not a config setting)


@dataclasses.dataclass(frozen=True)
class MeasureJob:
    """One Snakemake job: the cases of one experiment and dtype, measured on this run's device."""

    device: Device
    label: str
    experiment: str
    cases: tuple
    settings: Settings
    raise_limits_for: tuple = ()
    raised_limits_mib: tuple = ()


@dataclasses.dataclass(frozen=True)
class Toolchain:
    """A compiler (jax, jaxlib, libtpu) and what it compiles: the config's `toolchains`."""

    name: str
    pins: tuple = ()  # ((package, version), ...), sorted; empty for the pipeline's own environment
    runs: str = "study"  # "study" (the compile study's sweeps) or "published" (the post's configurations)
    targets: tuple | None = None  # None: the config's targets
    static_profile: bool = False  # True: Pallas cycles from libtpu's static profile
    environment: tuple = ()  # ((variable, value), ...) set for its compile workers
    estimates_for: tuple = ()  # targets whose estimates come from this toolchain (plan/toolchains.py)

    @property
    def pipeline(self) -> bool:
        return not self.pins

    def requirements(self) -> list[str]:
        return [f"{package}=={version}" for package, version in self.pins]

    def describe(self) -> str:
        """'post (jax==0.4.36, jaxlib==0.4.36, libtpu==0.0.5)', for messages and logs."""
        return (f"{self.name} ({', '.join(self.requirements())})" if self.pins
                else f"{self.name} (pipeline environment)")

    def pins_hash(self) -> str:
        """Names the environment: a change of pins or of the Python running it is a new environment."""
        key = json.dumps({"pins": self.pins, "python": list(sys.version_info[:2])}, sort_keys=True)
        return hashlib.sha256(key.encode()).hexdigest()[:12]


def searched(case: Case, job) -> bool:
    """A configuration of the experiment's block search, not one of the post's own (those are the ones
    retried at raised limits); XLA's baseline is never searched. Estimated and measured rows alike."""
    return case.facts.pallas and case not in job.raise_limits_for


def raised_limits(target: str, limits_mib, requested_bytes: int) -> list[int]:
    """The raised limits (MiB) worth compiling: at least what the compiler said the kernel requests,
    and within the chip's physical VMEM. Lower limits would fail for the reason already recorded."""
    c = chip(target)
    return [mib for mib in limits_mib if requested_bytes <= mib * MiB <= c.vmem_bytes]


def beyond_physical_vmem(target: str, case: Case) -> dict | None:
    """A vmem_oom result, without compiling, for a kernel whose blocks alone exceed the core's VMEM: no
    limit can make it fit, and libtpu takes minutes to say so; vmem_bytes is then the lower bound."""
    if not case.facts.pallas:
        return None
    need, have = min_vmem_bytes(case), chip(target).vmem_bytes
    if need <= have:
        return None
    return dict(status="vmem_oom", vmem_bytes=need, oom_limit_bytes=have, est_cycles=None, compile_s=0.0,
                error=f"not compiled: its VMEM blocks alone need {need / MiB:.2f} MiB, more than the core's "
                      f"{have / MiB:.0f} MiB of VMEM (a lower bound from the block shapes)")


def chip_columns(c: Chip, case: Case) -> dict:
    """The chip's figures and the case's HBM traffic and roofline: they travel with each row (estimated
    or measured), so figures and reports read only the table."""
    moved, work = cached_hbm_bytes(case), flops(case.m, case.k, case.n)
    hbm_seconds = moved / c.hbm_bytes_per_s
    return dict(peak_tflops=c.peak_flops[case.dtype] / TERA, hbm_bytes_per_s=c.hbm_bytes_per_s,
                hbm_bytes=moved, hbm_seconds=hbm_seconds,
                roofline_tflops=tflops(work, max(work / c.peak_flops[case.dtype], hbm_seconds)))
