"""Pallas TPU MatMul kernels from the post "TPU MatMul Kernel" (v1, v2, v3, v5) and the XLA baseline.

v4 is not a kernel of its own: it is v3's kernel swept over block sizes (see config/config.yaml).

Every module of this package that declares a `SPEC` (kernels/spec.py) is a kernel: the registry below
finds them, so adding a kernel is adding a module (and a config entry that uses it).
"""
import importlib
import pkgutil

from kernels.spec import KernelSpec


def _discover() -> dict[str, KernelSpec]:
    registry = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        spec = getattr(importlib.import_module(f"{__name__}.{info.name}"), "SPEC", None)
        if spec is None:
            continue
        if spec.name in registry:
            raise ValueError(f"kernel name {spec.name!r} declared twice ({registry[spec.name].module_path}, "
                             f"{spec.module_path})")
        registry[spec.name] = spec
    return dict(sorted(registry.items()))


# Kernel name (as in configs and result tables) -> its spec. v4 reuses v3's kernel.
REGISTRY = _discover()


def kernel_spec(name: str) -> KernelSpec:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"kernel={name!r} unknown; expected one of {sorted(REGISTRY)}") from None


__all__ = ["REGISTRY", "KernelSpec", "kernel_spec"]
