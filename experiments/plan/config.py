"""Loading and checking config/config.yaml: the JSON schema, then checks the schema cannot express.

Every error names the config key and the offending value, and is raised before any job runs.
"""
import copy
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import jsonschema
import yaml

from experiments.compile_study.study import Job, searched
from experiments.core.cases import Case, expand, search_space
from experiments.plan.search import search_covers
from kernels import REGISTRY, checks
from kernels.spec import BLOCKS, SPLIT

if TYPE_CHECKING:
    from experiments.measure.harness import MeasureJob

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "config" / "schema.yaml"

# What each grid kind needs from an experiment or correctness entry.
GRID_ARGS = {SPLIT: "splits", BLOCKS: "blocks"}
BLOCKED = tuple(name for name, spec in REGISTRY.items() if spec.grid == BLOCKS)


class ConfigError(ValueError):
    """A configuration value that cannot run; the message names the key and the value."""


def schema() -> dict:
    """config/schema.yaml, with its kernel enums filled from the kernel registry (kernels/)."""
    loaded = yaml.safe_load(SCHEMA.read_text())
    defs = loaded["$defs"]
    defs["kernel"]["enum"] = list(REGISTRY)
    defs["pallas_kernel"]["enum"] = [name for name, spec in REGISTRY.items() if spec.pallas]
    defs["blocked_kernel"]["enum"] = list(BLOCKED)
    return loaded


def checked(config: dict) -> dict:
    """`config` checked against the schema (ConfigError naming key and value), with its defaults."""
    check_schema(config)
    return with_defaults(config)


def with_defaults(config: dict, node: dict | None = None) -> dict:
    """A copy of `config` with every default of the schema filled in, at every depth.

    The schema is the one place defaults live: nothing else writes `.get(key, default)`.
    """
    root = schema() if node is None else None
    node = root if node is None else node
    return _fill(copy.deepcopy(config), node, root or node)


def _resolve(node: dict, root: dict) -> dict:
    while "$ref" in node:
        node = root["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _fill(value, node: dict, root: dict):
    node = _resolve(node, root)
    if not isinstance(value, dict):
        return value
    for key, sub in node.get("properties", {}).items():
        declared = [n for n in (sub, _resolve(sub, root)) if "default" in n]  # beside a $ref, or behind it
        if key not in value and declared:
            value[key] = copy.deepcopy(declared[0]["default"])
        if key in value:
            value[key] = _fill(value[key], sub, root)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        for key in set(value) - set(node.get("properties", {})):
            value[key] = _fill(value[key], extra, root)
    return value


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


def check_toolchains(config: dict) -> dict:
    """The config's toolchains (experiments/plan/toolchains.parse), a ConfigError if one cannot work."""
    from experiments.plan.toolchains import ToolchainError, parse

    try:
        return parse(config)
    except ToolchainError as e:
        raise ConfigError(str(e)) from None


def check_case(case: Case, key: str) -> None:
    """Raise ConfigError if the kernel would refuse `case` (tiling, divisibility, dtype)."""
    supported = REGISTRY[case.kernel].dtypes
    if case.dtype not in supported:
        raise ConfigError(f"{key}: dtype={case.dtype!r} not supported by kernel {case.kernel!r} "
                          f"(supported: {list(supported)})")
    if case.bm is not None:
        try:
            checks.check_blocks(case.m, case.k, case.n, case.bm, case.bk, case.bn)
        except ValueError as e:
            if REGISTRY[case.kernel].grid == SPLIT:  # the blocks follow from the split count and the shape
                raise ConfigError(f"{key}.splits: splits={case.m // case.bm} at shape m={case.m}, "
                                  f"k={case.k}, n={case.n} gives blocks ({case.bm}, {case.bk}, {case.bn}): "
                                  f"{e}") from None
            raise ConfigError(f"{key}.blocks: {e} (shape m={case.m}, k={case.k}, n={case.n})") from None


def check_grid_args(kernel: str, spec: dict, key: str) -> None:
    """A split kernel (v2) needs its split counts, a blocked one (v3, v5) its blocks."""
    needs = GRID_ARGS.get(REGISTRY[kernel].grid)
    if needs and needs not in spec:
        raise ConfigError(f"{key}.{needs}: required for kernel {kernel!r}")


def correctness_cases(config: dict) -> dict[str, list[tuple[Case, str]]]:
    """(case, mode) pairs per kernel from the `correctness` section, checked; raises ConfigError."""
    section = config["correctness"]
    tpu = section["tpu_interpret"]
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

    settings = dict(toolchain=primary(config), timeout_s=section["timeout_s"],
                    profile_max_steps=section["profile_max_steps"],
                    raised_limits_mib=tuple(section["raised_vmem_limits_mib"]),
                    skip_dominated=section["skip_dominated"])
    sweeps = {}  # (experiment, dtype) -> its own configurations and its block search's
    baseline_problems = {(s, s, s) for s in section["sizes"]}
    for name, spec in section["experiments"].items():
        key = f"compile_study.experiments.{name}"
        kernel = spec["kernel"]
        check_grid_args(kernel, spec, key)
        if "search" in spec and kernel not in BLOCKED:
            raise ConfigError(f"{key}.search: only for blocked kernels {BLOCKED}, not kernel={kernel!r}")
        problems = experiment_problems(spec, section, key)
        baseline_problems |= set(problems) | {(s, s, s) for s in spec.get("search", {}).get("sizes", ())}
        grid_args = dict(blocks=spec.get("blocks", ()), splits=spec.get("splits", ()))
        if "search" in spec:
            check_search_dtypes(spec, key)
        for dtype in spec["dtypes"]:
            own = _expand_checked(kernel, dtype, problems, grid_args, key, _fits)
            found = []
            if "search" in spec:
                search = spec["search"]
                found = _expand_checked(kernel, dtype, [(s, s, s) for s in search["sizes"]],
                                        dict(blocks=search_space(search)), f"{key}.search", _fits)
            squares = [p[0] for p in problems if p[0] == p[1] == p[2]]
            shapes = [list(p) for p in problems if not p[0] == p[1] == p[2]]
            none_fit = (f"{key}: no configuration fits sizes={squares}"
                        + (f" or shapes={shapes}" if shapes else "") + f" (dtype={dtype!r})")
            sweeps[(name, dtype)] = dict(spec=spec, own=own, search=[c for c in found if c not in own],
                                         where=none_fit)
    for dtype in section["baseline_dtypes"]:
        cases = _expand_checked("xla", dtype, sorted(baseline_problems, key=_problem_order), {},
                                "compile_study.baseline_dtypes")
        sweeps[("xla", dtype)] = dict(spec=None, own=cases, search=[], where="")
    jobs = {}
    for target in config["targets"]:
        for (name, dtype), sweep in sweeps.items():
            if sweep["spec"] is None:  # XLA's baseline: no blocks, nothing retried at raised limits
                cases, retried = sweep["own"], ()
            else:  # the experiment's own blocks, and its block search where it covers this target
                searched_here = search_covers(sweep["spec"], dtype, target)
                cases, retried = sweep["own"] + (sweep["search"] if searched_here else []), sweep["own"]
            if not cases:
                raise ConfigError(sweep["where"] + (f" on target {target!r}, where its block search does not "
                                                    "run (search.targets, search.dtypes)" if sweep["search"]
                                                    else ""))
            jobs[(target, name, dtype)] = Job(target=target, experiment=name, cases=tuple(cases),
                                              raise_limits_for=tuple(retried), **settings)
    return jobs


def experiment_problems(spec: dict, section: dict, key: str) -> list[tuple[int, int, int]]:
    """An experiment's (m, k, n) problems: its square sizes (default: the study's, unless it lists
    shapes), then its shapes. Shapes only for blocked kernels (and XLA's baseline, which compiles every
    experiment's problems), each dimension a multiple of the TPU lane width; a block that does not
    divide a shape is an error naming both (check_case), not skipped as a block larger than a size is."""
    kernel = spec["kernel"]
    shapes = [tuple(shape) for shape in spec.get("shapes", ())]
    if shapes and kernel not in BLOCKED:
        raise ConfigError(f"{key}.shapes: only for blocked kernels {BLOCKED}, not kernel={kernel!r}")
    for i, shape in enumerate(shapes):
        for dim, value in zip("mkn", shape, strict=True):
            if value % checks.LANE:
                raise ConfigError(f"{key}.shapes[{i}]: {dim}={value} of shape {list(shape)} is not a "
                                  f"multiple of {checks.LANE} (the TPU lane width)")
    sizes = spec.get("sizes", [] if shapes else section["sizes"])
    return [(s, s, s) for s in sizes] + [shape for shape in shapes if shape not in {(s, s, s) for s in sizes}]


def _problem_order(problem: tuple[int, int, int]):
    """Squares by size first (the post's order), then other shapes by FLOPs."""
    m, k, n = problem
    return (not m == k == n, m * k * n, problem)


def check_search_dtypes(spec: dict, key: str) -> None:
    """An experiment's `search.dtypes` must be among its own dtypes."""
    for dtype in spec["search"].get("dtypes", ()):
        if dtype not in spec["dtypes"]:
            raise ConfigError(f"{key}.search.dtypes: {dtype!r} is not one of the experiment's dtypes "
                              f"{spec['dtypes']}")


def study_parts(jobs: dict, parts: int) -> dict[tuple[str, str, str, str], Job]:
    """The compile study's Snakemake jobs: each job with a block search split into `parts` jobs keyed
    (target, experiment, dtype, "<i>of<n>"), others as one part ("1of1").

    All block shapes with one `bk` stay in one part: the sizes of a block shape share the small grids
    that give its VMEM verdict and cycle fit, and a searched shape is not compiled when one with the
    same bk and no larger bm and bn already ran out of VMEM in its job (study.dominated_result), so the
    rows do not depend on how a search is split. A search splits into at most as many parts as it has
    bk values. Groups are dealt out largest first to the part with the least work so far (work: the
    elements of the cases' blocks, which is what a compile's time grows with), so that parts take
    about as long as each other.
    """
    out = {}
    for (target, experiment, dtype), job in jobs.items():
        by_bk = {}
        for case in job.cases:
            by_bk.setdefault(case.bk or 0, []).append(case)
        n = parts if any(searched(case, job) for case in job.cases) else 1
        n = min(n, len(by_bk))
        work, groups = [0] * n, [[] for _ in range(n)]
        for _, cases in sorted(by_bk.items(), key=lambda kv: (-_work(kv[1]), kv[0])):
            i = work.index(min(work))
            work[i] += _work(cases)
            groups[i].extend(cases)
        for i, cases in enumerate(groups, 1):
            chosen = set(cases)
            ordered = tuple(c for c in job.cases if c in chosen)  # the job's own order
            retried = tuple(c for c in job.raise_limits_for if c in chosen)
            part = dataclasses.replace(job, cases=ordered, raise_limits_for=retried)
            out[(target, experiment, dtype, f"{i}of{n}")] = part
    return out


MERGED_BASELINE_DTYPE = "all"  # the dtype part of the one baseline job per target (merge_baseline_jobs)


def merge_baseline_jobs(parts: dict) -> dict:
    """study_parts' jobs with each target's XLA baseline jobs (one per dtype) merged into one, keyed
    (target, "xla", "all", "1of1"): a few seconds of compiles each, less than the start of a job and
    its compile workers. Its rows are theirs, in the same order (each row carries its case's dtype)."""
    out = {}
    for (target, experiment, dtype, part), job in parts.items():
        key = (target, experiment, dtype, part)
        if experiment == "xla":  # the first dtype's place in the plan's order; the others' cases added
            key = (target, "xla", MERGED_BASELINE_DTYPE, "1of1")
            job = dataclasses.replace(out[key], cases=out[key].cases + job.cases) if key in out else job
        out[key] = job
    return out


def expected_work(job: Job) -> int:
    """A job's compile work, in the units study_parts balances: the scheduler starts the longest
    compile jobs first (longest-processing-time order), so that the short ones fill the last gaps."""
    return _work(job.cases)


def _work(cases) -> int:
    """The elements of the cases' blocks (a whole operand where a kernel has none): what a compile's
    time grows with."""
    return sum((c.bm or c.m) * (c.bk or c.k) + (c.bk or c.k) * (c.bn or c.n) + (c.bm or c.m) * (c.bn or c.n)
               for c in cases)


def measure_settings(config: dict, **overrides):
    """Settings of the measurement harness from a config's `measure` section; `overrides` replace
    single settings (tests use the schema's defaults for everything else: with_defaults({}))."""
    from experiments.measure.harness import Settings

    section = config["measure"]
    fields = ("warmup", "samples", "input_sets", "min_sample_s", "max_calls", "timeout_s", "profile")
    settings = {f: section[f] for f in fields} | dict(tolerance=tuple(sorted(section["tolerance"].items())))
    return Settings(**(settings | overrides))


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

    section = config["measure"]
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
        out[(experiment, dtype)] = MeasureJob(device=device, label=label, experiment=experiment,
                                              cases=job.cases, raise_limits_for=job.raise_limits_for,
                                              raised_limits_mib=job.raised_limits_mib, settings=settings)
    if not out:
        raise ConfigError(f"measure.device: {section.get('device')!r} would measure nothing: on the CPU only "
                          "XLA's matmul is measured, and compile_study.baseline_dtypes is empty")
    return out


def validate(config: dict) -> dict:
    """Schema and semantic checks; returns the config with the schema's defaults filled in, or raises
    ConfigError. A `cpu` measurement is planned too (a TPU's plan differs only in its device)."""
    from experiments.measure.device import Device
    from experiments.plan.plan import make_plan

    config = checked(config)
    cpu = Device("cpu", "cpu", "cpu", 1) if config["measure"]["device"] == "cpu" else None
    make_plan(config, device=cpu, label="check")
    return config


class _StrictLoader(yaml.SafeLoader):
    """YAML that refuses a key given twice in one mapping (plain YAML keeps the last, silently)."""


def _mapping_without_duplicates(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} appears twice (first on line {seen[key] + 1}): YAML would keep "
                            "only the last one", key_node.start_mark)
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates)


def load_yaml(path) -> dict:
    """A config file's contents; ConfigError with the file and line of a syntax error or a duplicate key."""
    path = Path(path)
    try:
        loaded = yaml.load(path.read_text(encoding="utf-8"), Loader=_StrictLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise ConfigError(f"{where}: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read: {e.strerror}") from None
    if loaded is not None and not isinstance(loaded, dict):
        raise ConfigError(f"{path}: a config file holds a mapping of keys, not a {type(loaded).__name__}")
    return loaded or {}


def load(path) -> dict:
    return validate(load_yaml(path))
