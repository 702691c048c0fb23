"""The few Pallas TPU names that differ between the jax releases the project compiles with (its own and
the older toolchains of config `toolchains`), each with the release that changed it, so that a kernel
reads as the post wrote it."""
import re

from jax.experimental.pallas import tpu as pltpu


def compiler_params_class():
    """Mosaic's compiler parameters: `pltpu.CompilerParams` in jax 0.10.2 and 0.12.0.1 (which no longer
    have the old name), `pltpu.TPUCompilerParams` in jax 0.4.36 (which has only that one)."""
    cls = getattr(pltpu, "CompilerParams", None) or getattr(pltpu, "TPUCompilerParams", None)
    if cls is None:
        import jax

        raise ImportError(f"jax {jax.__version__}: neither pltpu.CompilerParams nor pltpu.TPUCompilerParams "
                          "exists; kernels/compat.py does not know this release")
    return cls


def compiler_params(**kwargs):
    """`compiler_params=` for `pl.pallas_call`, e.g. compiler_params(vmem_limit_bytes=...)."""
    return compiler_params_class()(**kwargs)



# "Unsupported version: expected <= 7 but got 8": libtpu cannot read the Mosaic IR version jax wrote.
_IR_VERSION_ERROR = re.compile(r"Unsupported version: expected <= (\d+) but got (\d+)")


def readable_mosaic_ir_version(message: str) -> int | None:
    """The newest Mosaic IR version libtpu says it can read, from its refusal of a newer one, else None.

    jax picks the version it serialises Pallas kernels at from the build date of the libtpu it runs on
    (`tpu_custom_call.get_ir_version`, jax 0.5 and later), but only on a Cloud TPU host: a deviceless
    compile gets the newest version, which a libtpu older than that jax release cannot read (seen: jax
    0.7.1 writes 8, libtpu 0.0.20 of its own [tpu] extra reads up to 7). On a TPU host the pair works,
    with the older version."""
    found = _IR_VERSION_ERROR.search(message)
    return int(found.group(1)) if found and int(found.group(1)) < int(found.group(2)) else None


def use_mosaic_ir_version(version: int) -> bool:
    """Serialise Mosaic kernels at `version` from now on in this process, as jax would on a TPU host with
    a libtpu of that age; False where this jax has no such setting (then it never writes another)."""
    from jax._src import tpu_custom_call

    if not hasattr(tpu_custom_call, "get_ir_version"):
        return False
    tpu_custom_call.get_ir_version = lambda ctx: version
    return True


def tpu_info():
    """jax's table of TPU generations (`ChipVersion`, `chip_version_from_device_kind`, per-chip figures):
    `jax._src.tpu_info` in jax 0.12.0.1, where `jax._src.pallas.mosaic.tpu_info` is a forwarding shim
    marked for removal; only the latter in jax 0.10.2 and before. Private to jax either way."""
    try:
        from jax._src import tpu_info as module
    except ImportError:
        from jax._src.pallas.mosaic import tpu_info as module
    return module
