"""The jobs a checked config asks for: correctness cases, compile-study jobs and their parts, the
toolchains' jobs and measurement jobs; a ConfigError naming key and value while planning.
"""
import copy
import csv
import dataclasses

from tpu_matmul_repro.experiments.core.cases import Case, expand, search_space
from tpu_matmul_repro.experiments.core.jobs import Job, MeasureJob, Settings, searched
from tpu_matmul_repro.experiments.plan.config import BLOCKED, ConfigError
from tpu_matmul_repro.experiments.plan.search_scope import search_covers
from tpu_matmul_repro.experiments.plan.toolchains import ToolchainError, parse, primary
from tpu_matmul_repro.kernels import DECLARED, checks
from tpu_matmul_repro.kernels.spec import BLOCKS, SPLIT

# What each grid kind needs from an experiment or correctness entry.
GRID_ARGS = {SPLIT: "splits", BLOCKS: "blocks"}


MERGED_BASELINE_DTYPE = "all"  # the dtype part of the one baseline job per target (merge_baseline_jobs)
ALL_JOBS = "all"  # the batch name of a toolchain's every job for one target (toolchain_batches)


def check_toolchains(config: dict) -> dict:
    """The config's toolchains (experiments/plan/toolchains.parse), a ConfigError if one cannot work."""
    try:
        return parse(config)
    except ToolchainError as e:
        raise ConfigError(str(e)) from None


def check_case(case: Case, key: str) -> None:
    """Raise ConfigError if the kernel would refuse `case` (tiling, divisibility, dtype)."""
    supported = DECLARED[case.kernel].dtypes
    if case.dtype not in supported:
        raise ConfigError(f"{key}: dtype={case.dtype!r} not supported by kernel {case.kernel!r} "
                          f"(supported: {list(supported)})")
    if case.bm is not None:
        try:
            checks.check_blocks(case.m, case.k, case.n, case.bm, case.bk, case.bn)
        except ValueError as e:
            if DECLARED[case.kernel].grid == SPLIT:  # the blocks follow from the split count and the shape
                raise ConfigError(f"{key}.splits: splits={case.m // case.bm} at shape m={case.m}, "
                                  f"k={case.k}, n={case.n} gives blocks ({case.bm}, {case.bk}, {case.bn}): "
                                  f"{e}") from None
            raise ConfigError(f"{key}.blocks: {e} (shape m={case.m}, k={case.k}, n={case.n})") from None


def check_grid_args(kernel: str, spec: dict, key: str) -> None:
    """A split kernel (v2) needs its split counts, a blocked one (v3, v5) its blocks."""
    needs = GRID_ARGS.get(DECLARED[kernel].grid)
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


def compile_settings(config: dict) -> dict:
    """The Job fields besides target, experiment and cases: the compile study's and the advisor's."""
    section = config["compile_study"]
    return dict(toolchain=primary(config), timeout_s=section["timeout_s"],
                profile_max_steps=section["profile_max_steps"],
                raised_limits_mib=tuple(section["raised_vmem_limits_mib"]),
                skip_dominated=section["skip_dominated"])


def compile_jobs(config: dict) -> dict[tuple[str, str, str], Job]:
    """Jobs of the compile study keyed by (target, experiment, dtype); "xla" is the baseline."""
    section = config["compile_study"]
    settings = compile_settings(config)
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
    for kernel, variant in section.get("baseline_variants", {}).items():  # XLA at another precision
        key = f"compile_study.baseline_variants.{kernel}"
        for dtype in variant["dtypes"]:
            cases = _expand_checked(kernel, dtype, [(s, s, s) for s in variant["sizes"]], {}, key)
            sweep = sweeps.setdefault(("xla", dtype), dict(spec=None, own=[], search=[], where=""))
            sweep["own"] = sweep["own"] + cases
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
    shapes), then its shapes (blocked kernels only, each dimension a multiple of the lane width)."""
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


def compile_parts(jobs: dict, parts: int) -> dict[tuple[str, str, str, str], Job]:
    """The compile study's Snakemake jobs, keyed (target, experiment, dtype, "<i>of<n>"): a job with a block
    search split into `parts`, each bk's shapes in one part (so no row depends on the split, as
    study.dominated_result compares within a bk), dealt out largest first to the part with the least work
    (_work); others one part, "1of1"."""
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


def merge_baseline_jobs(parts: dict) -> dict:
    """compile_parts' jobs with each target's XLA baseline jobs (one per dtype) merged into one, keyed
    (target, "xla", "all", "1of1"): a few seconds of compiles each, less than starting a job."""
    out = {}
    for (target, experiment, dtype, part), job in parts.items():
        key = (target, experiment, dtype, part)
        if experiment == "xla":  # the first dtype's place in the plan's order; the others' cases added
            key = (target, "xla", MERGED_BASELINE_DTYPE, "1of1")
            job = dataclasses.replace(out[key], cases=out[key].cases + job.cases) if key in out else job
        out[key] = job
    return out


def expected_work(job: Job) -> int:
    """A job's compile work (_work): the scheduler starts the longest compile jobs first."""
    return _work(job.cases)


def _work(cases) -> int:
    """The elements of the cases' blocks (a whole operand where none): what a compile's time grows with."""
    return sum((c.bm or c.m) * (c.bk or c.k) + (c.bk or c.k) * (c.bn or c.n) + (c.bm or c.m) * (c.bn or c.n)
               for c in cases)


def measure_settings(config: dict, **overrides):
    """The harness's Settings from a config's `measure` section, `overrides` replacing single ones."""
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
    for variant in section.get("baseline_variants", {}).values():  # XLA at HIGHEST: its sizes among them
        variant["sizes"] = [s for s in variant["sizes"] if s in sizes]
    return config


def measure_jobs(config: dict, device, label: str) -> dict[tuple[str, str], MeasureJob]:
    """Measurement jobs keyed by (experiment, dtype): the compile study's sweeps, on `device`; on the CPU
    only XLA's matmul (Pallas kernels run there only in interpret mode)."""
    section = config["measure"]
    swept = with_sizes(config, section["sizes"]) if section.get("sizes") else config
    if device.platform == "cpu":
        swept = copy.deepcopy(swept)
        swept["compile_study"]["experiments"] = {}
    try:
        jobs = compile_jobs({**swept, "targets": [device.name]})
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


def published_cases(path) -> dict[tuple[str, str], list["Case"]]:
    """The post's configurations from data/published_v5e.csv, by (experiment, dtype); XLA's under "xla".
    The post's figure number names the experiment (figure 4 is "v4", v3's kernel over other blocks)."""
    out: dict[tuple[str, str], list[Case]] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            kernel = {"v4": "v3"}.get(row["kernel"], row["kernel"])
            experiment = "xla" if kernel == "xla" else f"v{row['figure']}"
            blocks = [int(row[b]) if row[b] else None for b in ("bm", "bk", "bn")]
            case = Case(kernel, row["dtype"], int(row["m"]), int(row["k"]), int(row["n"]), *blocks)
            cases = out.setdefault((experiment, row["dtype"]), [])
            if case not in cases:  # XLA's baseline appears in several figures
                cases.append(case)
    return out


def published_jobs(config: dict, published_path, target: str = "v5e") -> dict[tuple[str, str], Job]:
    """Jobs compiling the post's own configurations for `target` with the config's compile settings, each
    retried at the raised limits, keyed by (experiment, dtype): what the advisor's own fit needs."""
    settings = compile_settings(config)
    return {key: Job(target=target, experiment=key[0], cases=tuple(cases), raise_limits_for=tuple(cases),
                     **settings)
            for key, cases in published_cases(published_path).items()}


def toolchain_jobs(config: dict, published_path) -> dict[tuple[str, str, str, str], object]:
    """Compile jobs of the toolchains with environments of their own, keyed (toolchain, target, experiment,
    dtype): `runs: study` the compile study's sweeps, `runs: published` the post's configurations at the
    study's sizes and the default limit."""
    out = {}
    sizes = set(config["compile_study"]["sizes"])
    settings = dict(timeout_s=config["compile_study"]["timeout_s"],
                    profile_max_steps=config["compile_study"]["profile_max_steps"])
    for toolchain in parse(config).values():
        if toolchain.pipeline:
            continue
        targets = ([t for t in config["targets"] if t in toolchain.estimates_for] if toolchain.estimates_for
                   else list(toolchain.targets or config["targets"]))
        common = dict(toolchain=toolchain.name, static_profile=toolchain.static_profile)
        if toolchain.runs == "study":
            for (target, experiment, dtype), job in compile_jobs({**config, "targets": targets}).items():
                out[(toolchain.name, target, experiment, dtype)] = dataclasses.replace(job, **common)
            continue
        for (experiment, dtype), cases in published_cases(published_path).items():
            cases = tuple(c for c in cases if c.m in sizes)
            for target in targets if cases else ():
                out[(toolchain.name, target, experiment, dtype)] = Job(
                    target=target, experiment=experiment, cases=cases, raise_limits_for=cases,
                    **settings, **common)
    return out


def toolchain_batches(jobs: dict, toolchains: dict) -> dict[tuple[str, str, str], tuple]:
    """The other toolchains' Snakemake jobs keyed (toolchain, target, batch): `runs: published` a target's
    jobs as one ("all", seconds of compiles each); `runs: study` one per (experiment, dtype)."""
    out: dict[tuple[str, str, str], tuple] = {}
    for (name, target, experiment, dtype), job in jobs.items():
        batch = ALL_JOBS if toolchains[name].runs == "published" else f"{experiment}_{dtype}"
        out[(name, target, batch)] = out.get((name, target, batch), ()) + (job,)
    return out
