"""Run inside one toolchain's environment by mechanism.py --breakdown: per case, the Mosaic custom call's
backend_config keys and libtpu's used_scoped_memory_configs, one JSON line each, via the compile worker.
"""
import base64
import dataclasses
import json
import re
import sys

from tpu_matmul_repro.experiments.compile_study import compile_worker
from tpu_matmul_repro.experiments.core import compiler_output
from tpu_matmul_repro.experiments.core.cases import Case, wrapper

_BACKEND_CONFIG = re.compile(r'custom_call_target="tpu_custom_call".*?backend_config=(.*)$', re.MULTILINE)
_USED = re.compile(r'"used_scoped_memory_configs":(\[[^\]]*\])')
_BODY = re.compile(r'"body":\s*"([^"]*)"')
_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_.<>]{3,}")  # names in the MLIR bytecode's string table


def body_names(lowered: str) -> list[str]:
    """The attribute, op and dialect names in the Mosaic module jax wrote (its bytecode's strings), so
    two jax releases' kernels can be compared without a Mosaic parser."""
    names = set()
    for body in _BODY.findall(lowered):
        names |= {w.decode() for w in _WORD.findall(base64.b64decode(body))}
    return sorted(names)


def lowered_text(case: Case) -> str:
    import jax

    sharding = jax.sharding.SingleDeviceSharding(compile_worker._device)
    args = (jax.ShapeDtypeStruct((case.m, case.k), case.dtype, sharding=sharding),
            jax.ShapeDtypeStruct((case.k, case.n), case.dtype, sharding=sharding))
    fn = wrapper(case.kernel)
    return jax.jit(lambda a, b: fn(a, b, **case.kwargs())).lower(*args).as_text(dialect="hlo")


def loaded(import_name: str = "libtpu") -> dict:
    """What this process really runs: jax's versions and the libtpu shared object it mapped."""
    import importlib.metadata

    import jax

    with open("/proc/self/maps") as maps:
        libraries = sorted({line.split()[-1] for line in maps
                            if line.split()[-1].rsplit("/", 1)[-1].startswith(import_name)})
    return dict(jax=jax.__version__, jaxlib=importlib.metadata.version("jaxlib"),
                libtpu=importlib.metadata.version("libtpu"), libtpu_mapped=libraries)


IR_VERSIONS = (None, 7, 8, 9, 10)  # None: the version this jax picks itself (recorded as chosen_ir_version)


def compile_at(case: Case, version: int | None) -> dict:
    """One compile with Mosaic IR `version` forced (None: jax's own choice, recorded)."""
    from jax._src import tpu_custom_call

    chosen = []
    original = tpu_custom_call.get_ir_version

    def recorded(ctx):
        chosen.append(original(ctx))
        return chosen[-1] if version is None else version

    tpu_custom_call.get_ir_version = recorded
    out = dict(case=list(dataclasses.astuple(case)), ir_version=version)
    try:
        compiled = compile_worker.compile_text(case, None)
        out |= dict(status="ok", vmem_bytes=compiler_output.vmem_bytes_used(compiled),
                    used_scoped_memory_configs=[json.loads(u) for u in _USED.findall(compiled)])
    except Exception as e:  # an out-of-VMEM verdict or a refused version: a finding
        out |= compiler_output.compile_failure(e)
    finally:
        tpu_custom_call.get_ir_version = original
    out["chosen_ir_version"] = chosen[0] if chosen else "not called"
    return out


def main() -> None:
    target, cases = sys.argv[1], [Case(*c) for c in json.loads(sys.argv[2])]
    compile_worker.init_worker(target, None)
    print(json.dumps(dict(loaded=loaded())), flush=True)
    for case in cases:
        try:
            names = body_names(lowered_text(case))
        except Exception as e:
            names = [f"error: {type(e).__name__}: {e}"[:300]]
        print(json.dumps(dict(case=list(dataclasses.astuple(case)), body_names=names)), flush=True)
        for version in IR_VERSIONS:
            print(json.dumps(compile_at(case, version)), flush=True)


if __name__ == "__main__":
    main()
