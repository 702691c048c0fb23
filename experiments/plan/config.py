"""Loading and checking config/config.yaml: the JSON schema, then checks the schema cannot express.

Every error names the config key and the offending value, and is raised before any job runs.
"""
import copy
from pathlib import Path

import jsonschema
import yaml

from experiments.core.cases import Case, expand, search_space
from experiments.compile_study.study import Job
from kernels import checks
from kernels.v1_naive import SUPPORTED_DTYPES as V1_DTYPES
from kernels.v2_parallel import SUPPORTED_DTYPES as V2_DTYPES
from kernels.v3_block import SUPPORTED_DTYPES as V3_DTYPES
from kernels.v5_accumulator import SUPPORTED_DTYPES as V5_DTYPES
from kernels.xla_baseline import SUPPORTED_DTYPES as XLA_DTYPES

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "config" / "schema.yaml"

KERNEL_DTYPES = {"v1": V1_DTYPES, "v2": V2_DTYPES, "v3": V3_DTYPES, "v5": V5_DTYPES, "xla": XLA_DTYPES}
BLOCKED = ("v3", "v5")


class ConfigError(ValueError):
    """A configuration value that cannot run; the message names the key and the value."""


def schema() -> dict:
    return yaml.safe_load(SCHEMA.read_text())


def check_schema(config: dict) -> None:
    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{_key(e.absolute_path) or '<root>'}: {e.message}" for e in errors]
        raise ConfigError("invalid config:\n  " + "\n  ".join(lines))


def _key(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def check_toolchains(config: dict) -> None:
    from experiments.plan.toolchains import ToolchainError, parse

    try:
        parse(config)
    except ToolchainError as e:
        raise ConfigError(str(e)) from None


def check_case(case: Case, key: str) -> None:
    """Raise ConfigError if the kernel would refuse `case` (tiling, divisibility, dtype)."""
    if case.dtype not in KERNEL_DTYPES[case.kernel]:
        raise ConfigError(f"{key}: dtype={case.dtype!r} not supported by kernel {case.kernel!r} "
                          f"(supported: {list(KERNEL_DTYPES[case.kernel])})")
    if case.bm is not None:
        try:
            checks.check_blocks(case.m, case.k, case.n, case.bm, case.bk, case.bn)
        except ValueError as e:
            raise ConfigError(f"{key}.blocks: {e} (shape m={case.m}, k={case.k}, n={case.n})") from None


def check_grid_args(kernel: str, spec: dict, key: str) -> None:
    """v2 needs its split counts, v3 and v5 their blocks."""
    needs = {"v2": "splits", "v3": "blocks", "v5": "blocks"}.get(kernel)
    if needs and needs not in spec:
        raise ConfigError(f"{key}.{needs}: required for kernel {kernel!r}")


def correctness_cases(config: dict) -> dict[str, list[tuple[Case, str]]]:
    """(case, mode) pairs per kernel from the `correctness` section, checked; raises ConfigError."""
    section = config["correctness"]
    tpu = section.get("tpu_interpret", {"kernels": [], "shapes": []})
    out = {}
    for kernel, spec in section["kernels"].items():
        key = f"correctness.kernels.{kernel}"
        check_grid_args(kernel, spec, key)
        pairs = []
        for dtype in spec["dtypes"]:
            grid_args = dict(blocks=spec.get("blocks", ()), splits=spec.get("splits", ()))
            for mode, shapes in (("interpret", spec.get("shapes", section["shapes"])),
                                 ("tpu-interpret", tpu["shapes"] if kernel in tpu["kernels"] else [])):
                for case in _expand_checked(kernel, dtype, shapes, grid_args, key):
                    pairs.append((case, mode))
        out[kernel] = pairs
    for kernel in tpu["kernels"]:
        if kernel not in section["kernels"]:
            raise ConfigError(f"correctness.tpu_interpret.kernels: {kernel!r} is not in correctness.kernels")
    return out


def _expand_checked(kernel, dtype, shapes, grid_args, key, keep=None) -> list[Case]:
    """Cases of a sweep, filtered by `keep`, each checked as the kernel would check it."""
    try:
        cases = expand(kernel, dtype, shapes, **grid_args)
    except ValueError as e:  # v2 splits that do not divide a shape
        raise ConfigError(f"{key}.splits: {e}") from None
    cases = [c for c in cases if keep is None or keep(c)]
    for case in cases:
        check_case(case, key)
    return cases


def _fits(case: Case) -> bool:
    """Blocks no larger than their dimensions (larger ones are skipped at that size, by design)."""
    return case.bm is None or (case.bm <= case.m and case.bk <= case.k and case.bn <= case.n)


def study_jobs(config: dict) -> dict[tuple[str, str, str], Job]:
    """Jobs of the compile study keyed by (target, experiment, dtype); "xla" is the baseline."""
    section = config["compile_study"]
    from experiments.plan.toolchains import primary

    settings = dict(toolchain=primary(config), timeout_s=section.get("timeout_s", 300),
                    profile_max_steps=section.get("profile_max_steps", 16),
                    raised_limits_mib=tuple(section.get("raised_vmem_limits_mib", ())))
    per_target = {}
    baseline_sizes = set(section["sizes"])
    for name, spec in section["experiments"].items():
        key = f"compile_study.experiments.{name}"
        kernel = spec["kernel"]
        check_grid_args(kernel, spec, key)
        if "search" in spec and kernel not in BLOCKED:
            raise ConfigError(f"{key}.search: only for blocked kernels {BLOCKED}, not kernel={kernel!r}")
        sizes = spec.get("sizes", section["sizes"])
        baseline_sizes |= set(sizes) | set(spec.get("search", {}).get("sizes", ()))
        grid_args = dict(blocks=spec.get("blocks", ()), splits=spec.get("splits", ()))
        for dtype in spec["dtypes"]:
            explicit = _expand_checked(kernel, dtype, [(s, s, s) for s in sizes], grid_args, key, _fits)
            searched = []
            if "search" in spec:
                search = spec["search"]
                found = _expand_checked(kernel, dtype, [(s, s, s) for s in search["sizes"]],
                                        dict(blocks=search_space(search)), f"{key}.search", _fits)
                searched = [c for c in found if c not in explicit]
            if not explicit + searched:
                raise ConfigError(f"{key}: no configuration fits sizes={sizes} (dtype={dtype!r})")
            per_target[(name, dtype)] = dict(experiment=name, cases=tuple(explicit + searched),
                                             raise_limits_for=tuple(explicit))
    for dtype in section.get("baseline_dtypes", ()):
        cases = _expand_checked("xla", dtype, [(s, s, s) for s in sorted(baseline_sizes)], {},
                                "compile_study.baseline_dtypes")
        per_target[("xla", dtype)] = dict(experiment="xla", cases=tuple(cases))
    return {(target, name, dtype): Job(target=target, **job, **settings)
            for target in config["targets"] for (name, dtype), job in per_target.items()}


def measure_settings(config: dict):
    from experiments.measure.harness import Settings

    section = config.get("measure", {})
    defaults = Settings()
    tolerance = section.get("tolerance", dict(defaults.tolerance))
    return Settings(**{f: section.get(f, getattr(defaults, f))
                       for f in ("warmup", "samples", "input_sets", "min_sample_s", "max_calls")},
                    tolerance=tuple(sorted(tolerance.items())))


def with_sizes(config: dict, sizes: list[int]) -> dict:
    """`config` with the compile study's sweeps restricted to `sizes` (measure.sizes)."""
    config = copy.deepcopy(config)
    section = config["compile_study"]
    section["sizes"] = list(sizes)
    for spec in section["experiments"].values():
        spec.pop("sizes", None)
        if "search" in spec:
            spec["search"]["sizes"] = [s for s in spec["search"]["sizes"] if s in sizes]
            if not spec["search"]["sizes"]:
                del spec["search"]
    return config


def measure_jobs(config: dict, device, label: str) -> dict[tuple[str, str], "MeasureJob"]:
    """Measurement jobs keyed by (experiment, dtype): the compile study's sweeps, on `device`.

    On the CPU only XLA's matmul is measured (Pallas kernels run there only in interpret mode).
    """
    from experiments.measure.harness import MeasureJob

    section = config.get("measure", {})
    swept = with_sizes(config, section["sizes"]) if section.get("sizes") else config
    if device.platform == "cpu":
        swept = copy.deepcopy(swept)
        swept["compile_study"]["experiments"] = {}
    try:
        jobs = study_jobs({**swept, "targets": [device.name]})
    except ConfigError as e:
        raise ConfigError(f"measure.sizes={section.get('sizes')}: {e}") from None
    settings = measure_settings(config)
    out = {}
    for (_, experiment, dtype), job in jobs.items():
        if device.platform == "cpu" and experiment != "xla":
            continue
        out[(experiment, dtype)] = MeasureJob(device=device, label=label, experiment=experiment, cases=job.cases,
                                              raise_limits_for=job.raise_limits_for,
                                              raised_limits_mib=job.raised_limits_mib, settings=settings)
    if not out:
        raise ConfigError(f"measure.device: {section.get('device')!r} would measure nothing: on the CPU only "
                          "XLA's matmul is measured, and compile_study.baseline_dtypes is empty")
    return out


def validate(config: dict) -> dict:
    """Schema and semantic checks; returns the config unchanged or raises ConfigError."""
    check_schema(config)
    check_toolchains(config)
    correctness_cases(config)
    study_jobs(config)
    if config.get("measure", {}).get("device") == "cpu":
        from experiments.measure.device import Device

        measure_jobs(config, Device("cpu", "cpu", "cpu", 1), "check")
    return config


def load(path) -> dict:
    path = Path(path)
    try:
        config = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None
    return validate(config or {})
