"""Which component doubled the post's Pallas VMEM requests, Mosaic's lowering (jax/jaxlib) or libtpu:
the two original pairs and the two cross pairs compiled through the history's probe code (README.md).
    python -m tpu_matmul_repro.studies.then_and_now.mechanism [--out studies/then_and_now/data/mechanism.csv]
"""
import argparse
import dataclasses
import json
import logging
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

from tpu_matmul_repro.experiments.compile_study import tpu_compile
from tpu_matmul_repro.experiments.core.atomic_write import write_csv_atomic
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.units import MiB
from tpu_matmul_repro.experiments.plan import config as experiment_config
from tpu_matmul_repro.studies.history.probes import ReleaseCompiler, settings_of
from tpu_matmul_repro.studies.history.releases import Release
from tpu_matmul_repro.studies.then_and_now import mechanism_probe
from tpu_matmul_repro.studies.toolchains import short_error

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = HERE / "data" / "mechanism.csv"
IR_OUT = HERE / "data" / "mechanism_ir_version.csv"

BEFORE, AFTER = ("0.8.0", "0.0.24"), ("0.8.1", "0.0.30")  # (jax = jaxlib, libtpu) either side of the step
TODAY = ("0.10.2", "0.0.42.1")
PAIRS = (  # (jax and jaxlib, libtpu, role)
    (BEFORE[0], BEFORE[1], "control"),
    (AFTER[0], AFTER[1], "control"),
    (BEFORE[0], AFTER[1], "cross"),
    (AFTER[0], BEFORE[1], "cross"),
    (TODAY[0], TODAY[1], "today"),  # the pipeline's own environment (requirements.txt)
)
# (experiment, case): the post's v2 split at 2048 and v4's two large blocks of v3's kernel, float32.
CASES = (
    ("v2", Case("v2", "float32", 2048, 2048, 2048, 512, 2048, 512)),
    ("v4", Case("v3", "float32", 2048, 2048, 2048, 512, 1024, 1024)),
    ("v4", Case("v3", "float32", 2048, 2048, 2048, 1024, 1024, 1024)),
)


@dataclasses.dataclass(frozen=True)
class Pair(Release):
    """A jax/jaxlib and libtpu pairing that is no release: named by both, so each has its environment."""

    @property
    def name(self) -> str:
        return f"jax-{self.jax}-libtpu-{self.libtpu}"


def pairs() -> list[Pair]:
    return [Pair(jax=jax, jaxlib=jax, libtpu=libtpu, note=role) for jax, libtpu, role in PAIRS]


def rows(compiler: ReleaseCompiler) -> pd.DataFrame:
    out = []
    for index, pair in enumerate(compiler.releases):
        for (experiment, case), row in zip(CASES, compiler.compile(index, list(CASES)), strict=True):
            vmem = None if pd.isna(row.get("vmem_bytes")) else int(row["vmem_bytes"])
            out.append(dict(
                role=pair.note, jax=pair.jax, jaxlib=pair.jaxlib, libtpu=pair.libtpu,
                installed_jax=row.get("jax_version"), installed_jaxlib=row.get("jaxlib_version"),
                installed_libtpu=row.get("libtpu_version"), target=row.get("target"),
                experiment=experiment, kernel=case.kernel, dtype=case.dtype, m=case.m, k=case.k, n=case.n,
                bm=case.bm, bk=case.bk, bn=case.bn, status=row["status"], vmem_bytes=vmem,
                vmem_mib=None if vmem is None else round(vmem / MiB, 3),
                vmem_limit_bytes=row.get("vmem_limit_bytes"), vmem_method=row.get("vmem_method") or "",
                error=short_error(str(row.get("error") or "")), git_sha=row.get("git_sha")))
    return pd.DataFrame(out)


def error_line(message: str) -> str:
    """The line that says why: an MLIR pass's own "error: ..." line (jaxlib refusing to write a Mosaic
    IR version says so there, under a generic first line), else the row's usual short error."""
    said = [line.strip() for line in message.splitlines() if line.strip().startswith("error:")]
    return said[0] if said else short_error(message)


def by_ir_version(compiler: ReleaseCompiler) -> pd.DataFrame:
    """Each pair's cases compiled again at each Mosaic IR version (mechanism_probe.py, in the pair's
    environment): whether the request follows the version the kernel is serialised at."""
    out = []
    for index, pair in enumerate(compiler.releases):
        where = compiler.environment(index)
        with tempfile.TemporaryDirectory(prefix="mechanism-") as folder:
            env = tpu_compile.worker_env() | dict(where["env"] or {})
            env.pop("TPU_LIBRARY_PATH", None)  # this process's libtpu: the pair must load its own
            env = tpu_compile.with_import_root(env, folder)  # the pair's Python has not got the project
            done = subprocess.run(
                [where["python"] or sys.executable, "-m", mechanism_probe.__name__, compiler.settings.target,
                 json.dumps([dataclasses.astuple(case) for _, case in CASES])],
                capture_output=True, text=True, env=env, timeout=1800)
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        loaded = next((line["loaded"] for line in lines if "loaded" in line), {})
        if done.returncode or not loaded:
            raise RuntimeError(f"{pair.name}: mechanism_probe exited {done.returncode}: "
                               f"{done.stderr.strip().splitlines()[-1:]}")
        for line in lines:
            if "ir_version" not in line:
                continue
            vmem = line.get("vmem_bytes")
            out.append(dict(
                role=pair.note, jax=pair.jax, jaxlib=pair.jaxlib, libtpu=pair.libtpu,
                loaded_jax=loaded["jax"], loaded_jaxlib=loaded["jaxlib"], loaded_libtpu=loaded["libtpu"],
                libtpu_mapped=" ".join(loaded["libtpu_mapped"]),
                **dict(zip(("kernel", "dtype", "m", "k", "n", "bm", "bk", "bn"), line["case"], strict=True)),
                ir_version="default" if line["ir_version"] is None else line["ir_version"],
                chosen_ir_version=("newest" if line["chosen_ir_version"] is None  # jax's get_ir_version: None
                                   else line["chosen_ir_version"]), status=line["status"], vmem_bytes=vmem,
                vmem_mib=None if vmem is None else round(vmem / MiB, 3),
                error=error_line(str(line.get("error") or ""))))
    return pd.DataFrame(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--ir-versions-out", type=Path, default=IR_OUT,
                        help="also compile each pair at each Mosaic IR version, into this CSV")
    parser.add_argument("--skip-ir-versions", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    config = experiment_config.with_defaults(yaml.safe_load(args.config.read_text()))
    compiler = ReleaseCompiler(pairs(), config, settings_of(config), stderr=sys.stderr)
    table = rows(compiler)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_csv_atomic(table, args.out)
    if not args.skip_ir_versions:
        versions = by_ir_version(compiler)
        write_csv_atomic(versions, args.ir_versions_out)
        print(versions[["role", "jax", "libtpu", "bm", "bk", "bn", "ir_version", "chosen_ir_version",
                        "status", "vmem_mib"]].to_string(index=False))
    print(table[["role", "jax", "libtpu", "experiment", "bm", "bk", "bn", "status", "vmem_mib", "error"]]
          .to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
