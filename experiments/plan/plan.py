"""One planning call: a checked config in, every job of the pipeline out. The Snakefile and the tests
call `make_plan` alike; device detection stays outside and comes in as `device`.
"""
import dataclasses
from pathlib import Path

from tpu_matmul_repro.experiments.core import reading
from tpu_matmul_repro.experiments.core.chips import CHIPS
from tpu_matmul_repro.experiments.core.jobs import Device
from tpu_matmul_repro.experiments.plan import config as plan_config
from tpu_matmul_repro.experiments.plan import job_lists
from tpu_matmul_repro.experiments.plan import toolchains as plan_toolchains

PUBLISHED = Path(__file__).resolve().parents[2] / "data" / "published_v5e.csv"


@dataclasses.dataclass(frozen=True)
class Plan:
    config: dict  # the checked config it was planned from (plan_config.checked), as given
    correctness: dict  # kernel -> [(Case, mode)]
    targets: list  # TPU generations to compile for: the config's, plus measured or imported ones
    compile_jobs: dict  # (target, experiment, dtype, part) -> core.jobs.Job (jobs.compile_parts;
    # XLA's baseline one job per target, dtype "all": jobs.merge_baseline_jobs)
    device: Device | None  # measured on this run (experiments/measure/device.detect)
    label: str  # this run's measurement label
    measure: dict  # (experiment, dtype) -> core.jobs.MeasureJob
    imported: tuple  # carried measurement files (data/measured/*.parquet)
    toolchains: dict  # name -> plan.toolchains.Toolchain
    toolchain_jobs: dict  # (toolchain, target, experiment, dtype) -> Job, for the other toolchains
    toolchain_batches: dict  # (toolchain, target, batch) -> Jobs (jobs.toolchain_batches)
    served: dict  # target -> the toolchain other than the pipeline's own whose estimates it reads

    @property
    def measured_file(self) -> str | None:
        """The file this run's measurements land in, the one a user copies to other machines."""
        return f"results/measured/{self.device.name}-{self.label}.parquet" if self.device else None


def make_plan(config: dict, *, device=None, label: str = "local", imported=(), published=PUBLISHED) -> Plan:
    """Expand `config`, checked already (plan_config.checked), into the pipeline's jobs, checking what the
    schema cannot; `published`: data/published_v5e.csv. plan_config.ConfigError names key and value."""
    toolchains = job_lists.check_toolchains(config)
    correctness = job_lists.correctness_cases(config)
    measure = job_lists.measure_jobs(config, device, label) if device else {}
    imported = tuple(sorted(str(p) for p in imported))
    targets = list(dict.fromkeys(config["targets"] + known_targets([device] if device else [], imported)))
    with_targets = {**config, "targets": targets}
    served = plan_toolchains.served_by(toolchains)
    own = [t for t in targets if t not in served]  # served targets: compiled by their own toolchain only
    compile_jobs = {}
    if own:
        parts = job_lists.compile_parts(job_lists.compile_jobs({**config, "targets": own}),
                                        config["compile_study"]["search_jobs"])
        compile_jobs = job_lists.merge_baseline_jobs(parts)
    toolchain_jobs = job_lists.toolchain_jobs(with_targets, published)
    return Plan(config=config, correctness=correctness, targets=targets, compile_jobs=compile_jobs,
                device=device, label=label, measure=measure, imported=imported, toolchains=toolchains,
                toolchain_jobs=toolchain_jobs,
                toolchain_batches=job_lists.toolchain_batches(toolchain_jobs, toolchains), served=served)


def known_targets(devices, imported_paths) -> list[str]:
    """TPU generations (of experiments/core/chips.py) measured here or in imported measurement files."""
    import pandas as pd

    names = [d.name for d in devices]
    for path in imported_paths:
        try:
            reading.check_file(path, "carried file")  # a FIFO would block the plan, /dev/zero fill memory
            names += list(pd.read_parquet(path, columns=["target"]).target.unique())
        except Exception:  # noqa: BLE001  unreadable or without targets: its check job says why (rules/aggregate.smk)
            continue
    return [n for n in dict.fromkeys(names) if n in CHIPS]


def validate(config: dict) -> dict:
    """`config` checked and planned (a `cpu` measurement too), with its defaults; ConfigError otherwise."""
    config = plan_config.checked(config)
    cpu = Device("cpu", "cpu", "cpu", 1) if config["measure"]["device"] == "cpu" else None
    make_plan(config, device=cpu, label="check")
    return config


def load(path) -> dict:
    return validate(plan_config.load_yaml(path))
