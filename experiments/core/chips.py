"""TPU generations the compile study targets: topology names and public chip figures. Each Chip's
`sources` cites its figures by the keys listed in docs/generations.md (Sources); a figure is per compile
target device (a v5e/v6e device is one chip, v4/v5p a megacore chip, 7x one of a chip's two cores)."""
import dataclasses
import re

from tpu_matmul_repro.experiments.core.units import MiB  # noqa: F401  (re-exported: chips are sized in MiB)

# The chip the post measured on (its repository creates a v5litepod-1 VM: one TPU v5e): its published
# numbers are this target's, and the timing model is fitted on them alone.
POST_CHIP = "v5e"


@dataclasses.dataclass(frozen=True)
class Chip:
    name: str
    topology: str  # for jax.experimental.topologies.get_topology_desc(topology, "tpu")
    device_kind: str  # as libtpu reports it
    clock_hz: float
    peak_flops: dict  # dtype -> FLOP/s (int8: OP/s) of one compile target device
    hbm_bytes_per_s: float
    vmem_bytes: int  # physical VMEM per TensorCore: the most vmem_limit_bytes can ask
    default_vmem_limit_bytes: int  # scoped-VMEM limit when vmem_limit_bytes is not given
    sources: str
    # the MXU's edge ([tpu_info]: 128x128 MXUs up to v5p, 256x256 from v6e on): the smallest block edge
    # that keeps it busy
    mxu_width: int
    hbm_bytes: int  # [hbm]: the operands and the output of one matmul must fit in it
    color: str  # the generation's colour in every figure (Okabe-Ito, colour-blind safe)
    advised: bool = True  # whether the advisor offers it (advise --target, advice.targets)


def _peaks(bf16: float, int8: float | None) -> dict:
    # float32 matmuls at default precision run as one bf16 pass on the MXU (the post's XLA f32 curve
    # reaches 165 TFLOP/s on v5e, above any f32-pass rate), so their peak is the bf16 peak.
    return {"bfloat16": bf16, "float32": bf16, "int8": int8 if int8 else bf16}


CHIPS = {
    "v4": Chip("v4", "v4:2x2x1", "TPU v4", 1.05e9, _peaks(275e12, None), 1.23e12, 16 * MiB, 16 * MiB,
               "peak, HBM, VMEM: [tpu_info] x 2 cores; clock: [v4paper]; int8 not listed: bf16 rate",
               mxu_width=128, hbm_bytes=34_400_000_000, color="#999999", advised=False),
    "v5e": Chip("v5e", "v5e:2x2", "TPU v5 lite", 1.5e9, _peaks(197e12, 394e12), 8.2e11, 128 * MiB, 16 * MiB,
                "peak, HBM, VMEM: [tpu_info], [book]; clock: [derived] 197e12 / (4 x 128^2 x 2)",
                mxu_width=128, hbm_bytes=17_200_000_000, color="#0072B2"),
    "v5p": Chip("v5p", "v5p:2x2x1", "TPU v5", 1.75e9, _peaks(459e12, 918e12), 2.46e12, 64 * MiB, 16 * MiB,
                "peak, HBM, VMEM: [tpu_info] x 2 cores; clock: [derived] 459e12 / (8 x 128^2 x 2)",
                mxu_width=128, hbm_bytes=103_000_000_000, color="#009E73"),
    "v6e": Chip("v6e", "v6e:2x2", "TPU v6 lite", 1.75e9, _peaks(920e12, 1840e12), 1.64e12,
                128 * MiB, 32 * MiB,
                "peak, HBM, VMEM: [tpu_info]; clock: [derived] 920e12 / (4 x 256^2 x 2), see above",
                mxu_width=256, hbm_bytes=34_400_000_000, color="#E69F00"),
    "7x": Chip("7x", "TPU7x:2x2x1", "TPU7x", 2.2e9, _peaks(1.155e15, None), 3.7e12, 64 * MiB, 32 * MiB,
               "peak, HBM, VMEM: [tpu_info] per core; clock: [derived] 1.155e15 / (4 x 256^2 x 2), "
               "uncertain; int8 not listed: bf16 rate", mxu_width=256, hbm_bytes=206_000_000_000 // 2,
               color="#CC79A7"),
}


def advised_targets() -> tuple[str, ...]:
    """The generations the advisor offers, oldest first."""
    return tuple(name for name, c in CHIPS.items() if c.advised)


def generation_order(target: str) -> int:
    """A sort key: generations oldest first, as CHIPS lists them; unknown targets (cpu) last."""
    order = list(CHIPS)
    return order.index(target) if target in order else len(order)


def chip(target: str) -> Chip:
    try:
        return CHIPS[target]
    except KeyError:
        raise ValueError(f"target={target!r} unknown; expected one of {sorted(CHIPS)}") from None


def chip_version(device_kind: str):
    """jax's own lookup of a device kind, aliases included ("TPU v5 lite" and "TPU v5e" -> v5e);
    None for a kind jax does not know. It is private to jax (pinned in requirements.txt), so a jax
    without it falls back to this project's own names."""
    try:
        from tpu_matmul_repro.kernels.compat import tpu_info

        lookup = tpu_info().chip_version_from_device_kind
    except (ImportError, AttributeError):
        return None
    return lookup(device_kind)


def target_for_device_kind(device_kind: str) -> str:
    """"TPU v5 lite" or "TPU v5e" -> "v5e"; an unknown kind becomes a file-name-safe slug
    ("TPU v9" -> "tpu-v9")."""
    version = chip_version(device_kind)
    if version is not None and str(version) in CHIPS:  # jax's names are this project's target names
        return str(version)
    for name, c in CHIPS.items():
        if c.device_kind == device_kind:
            return name
    return re.sub(r"[^a-z0-9]+", "-", device_kind.lower()).strip("-") or "unknown"
