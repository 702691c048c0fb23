"""Which TPU generations the installed libtpu compiles for without a TPU, each tried in a process of its
own: `python3 tools/tpu_generations.py [--out data/tpu_generations.csv]` (docs/toolchains.md).
"""
import argparse
import csv
import datetime
import importlib.metadata
import io
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "tpu_generations.csv"
COLUMNS = ("generation", "target", "topology", "device_kind", "compiles", "vmem_bytes", "error", "jax",
           "libtpu", "checked")
TIMEOUT_S = 300


def topology_names(generation: str) -> list[str]:
    """The names libtpu might know `generation` by: "v5e:2x2" (lite chips), "v4:2x2x1", "TPU7x:2x2x1"."""
    prefixed = generation if generation.startswith("v") else f"TPU{generation}"
    return [f"{prefixed}:2x2x1", f"{prefixed}:2x2"]


def probe(generation: str) -> dict:
    """Runs in its own process: the first topology name libtpu accepts, and one compile on it."""
    import os

    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    from jax.experimental import topologies

    from tpu_matmul_repro.experiments.core import compiler_output
    from tpu_matmul_repro.kernels.v5_accumulator import matmul_v5

    errors = []
    for name in topology_names(generation):
        try:
            device = topologies.get_topology_desc(name, "tpu").devices[0]
        except Exception as e:  # libtpu's refusal ("Invalid TPU external name ..."): the next name
            errors.append(f"{name}: {str(e).strip().splitlines()[0][:200]}")
            continue
        sharding = jax.sharding.SingleDeviceSharding(device)
        shape = jax.ShapeDtypeStruct((256, 256), "bfloat16", sharding=sharding)
        row = dict(topology=name, device_kind=device.device_kind)
        try:
            kernel = jax.jit(lambda a, b: matmul_v5(a, b, bm=128, bk=128, bn=128))
            compiled = kernel.lower(shape, shape).compile()
            vmem = compiler_output.vmem_bytes_used(compiled.as_text())
            return dict(row, compiles=True, vmem_bytes=vmem, error="")
        except Exception as e:
            return dict(row, compiles=False, vmem_bytes=None, error=str(e).strip().splitlines()[0][:300])
    return dict(topology=" ".join(topology_names(generation)), device_kind="", compiles=False,
                vmem_bytes=None, error="; ".join(errors))


def check(generation: str) -> dict:
    """`probe` in a child process; a crash or a hang is its row's error."""
    try:
        done = subprocess.run([sys.executable, __file__, "--probe", generation], capture_output=True,
                              text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return dict(topology="", device_kind="", compiles=False, vmem_bytes=None,
                    error=f"no answer within {TIMEOUT_S} s")
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
        return dict(topology="", device_kind="", compiles=False, vmem_bytes=None,
                    error=f"probe exited {done.returncode}: {tail}")
    return json.loads(lines[-1])


def generations() -> list[str]:
    """jax's TPU generations, oldest first, as its ChipVersion lists them ("v2" ... "7x", "8i", "8t")."""
    from tpu_matmul_repro.kernels.compat import tpu_info

    return [str(v) for v in tpu_info().ChipVersion]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(json.dumps(probe(args.probe)))
        return 0
    from tpu_matmul_repro.experiments.core.atomic_write import write_text_atomic
    from tpu_matmul_repro.experiments.core.chips import CHIPS

    versions = {p: importlib.metadata.version(p) for p in ("jax", "libtpu")}
    today = datetime.date.today().isoformat()
    rows = []
    for generation in generations():
        row = dict(generation=generation, target=generation if generation in CHIPS else "",
                   **check(generation), **versions, checked=today)
        print(f"{generation}: {'compiles' if row['compiles'] else 'no: ' + row['error']}", flush=True)
        rows.append(row)
    out = io.StringIO()
    out.write("# TPU generations of jax's tpu_info, compiled for without a TPU (tools/tpu_generations.py):\n"
              "# compiles=true where libtpu accepted a topology name and compiled the v5 kernel for it.\n")
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({**r, "compiles": str(r["compiles"]).lower()} for r in rows)
    write_text_atomic(out.getvalue(), args.out)
    print(f"wrote {args.out}: {sum(r['compiles'] for r in rows)} of {len(rows)} generations compile "
          f"(jax {versions['jax']}, libtpu {versions['libtpu']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
