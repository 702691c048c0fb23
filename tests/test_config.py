"""Bad configurations are refused with the key and the value, before any job runs."""
import copy
from pathlib import Path

import pytest
import yaml

from tpu_matmul_repro.experiments.plan import config as experiment_config
from tpu_matmul_repro.experiments.plan import job_lists, plan

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def config():
    return yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def test_shipped_configs_are_valid():
    for path in (ROOT / "config").glob("config*.yaml"):
        plan.load(path)


def set_key(config, path, value):
    node = config
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return config


@pytest.mark.parametrize(
    "path, value, message",
    [
        (["correctness", "kernels", "v3", "blocks"], [[128, 100, 128]],
         r"correctness\.kernels\.v3\.blocks: bk=100 does not divide k=256"),
        (["compile_study", "experiments", "v4", "search", "targets"], ["v9"],
         r"compile_study\.experiments\.v4\.search\.targets\[0\]: 'v9' is not one of"),
        (["correctness", "kernels", "v1", "dtypes"], ["float8"],
         r"correctness\.kernels\.v1\.dtypes\[0\]: 'float8' is not one of"),
        (["correctness", "kernels", "v1", "dtypes"], ["int8"],
         r"correctness\.kernels\.v1: dtype='int8' not supported by kernel 'v1'"),
        (["correctness", "shapes"], [[0, 256, 256]],
         r"correctness\.shapes\[0\]\[0\]: 0 is less than the minimum of 1"),
        (["correctness", "shapes"], [], r"correctness\.shapes: \[\] should be non-empty"),
        (["correctness", "kernels", "v2", "splits"], [3],
         r"correctness\.kernels\.v2\.splits: splits=3 does not divide m=256"),
        (["correctness", "kernels", "v9"], {"dtypes": ["float32"]}, r"'v9' is not one of"),
        (["correctness", "tolerance", "float32"], "tight",
         r"correctness\.tolerance\.float32: 'tight' is not of type 'number'"),
        (["compile_study", "skip_dominated"], "sometimes",
         r"compile_study\.skip_dominated: 'sometimes' is not of type 'boolean'"),
        # issue 29: values the schema let through and a job crashed on, or that turned a check off
        (["compile_study", "timeout_s"], float("nan"),
         r"compile_study\.timeout_s: nan is not a finite number"),
        (["correctness", "tolerance", "float32"], float("inf"),
         r"correctness\.tolerance\.float32: inf is not a finite number"),
        (["correctness", "shapes"], [[256.0, 512, 384]],
         r"correctness\.shapes\[0\]\[0\]: 256\.0 is not of type 'integer'"),
        (["compile_study", "sizes"], [1024.0, 2048],
         r"compile_study\.sizes\[0\]: 1024\.0 is not of type 'integer'"),
        (["measure"], {"tolerance": {"float32": float("nan"), "bfloat16": 0.02, "int8": 0}},
         r"measure\.tolerance\.float32: nan is not a finite number"),
        (["measure"], {"tolerance": {"float32": ".nan", "bfloat16": 0.02, "int8": 0}},
         r"measure\.tolerance\.float32: nan is not a finite number"),  # as --config writes it
    ],
)
def test_bad_values_name_key_and_value(config, path, value, message):
    with pytest.raises(experiment_config.ConfigError, match=message):
        plan.validate(set_key(copy.deepcopy(config), path, value))


def test_missing_blocks_for_blocked_kernel(config):
    del config["correctness"]["kernels"]["v5"]["blocks"]
    with pytest.raises(experiment_config.ConfigError, match=r"correctness\.kernels\.v5\.blocks: required"):
        plan.validate(config)


def test_a_key_given_twice_is_refused_with_file_and_line(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("targets: [v5e]\ncompile_study: {}\ntargets: [v6e]\n")
    with pytest.raises(experiment_config.ConfigError,
                       match=r"config\.yaml:3:1: key 'targets' appears twice \(first on line 1\)"):
        experiment_config.load_yaml(path)


def test_a_yaml_syntax_error_names_file_and_line(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("targets: [v5e]\ncompile_study:\n  sizes: [512, 1024\n  timeout_s: 10\n")
    with pytest.raises(experiment_config.ConfigError, match=r"config\.yaml:4:\d+: "):
        experiment_config.load_yaml(path)


@pytest.mark.parametrize("path, value, message", [
    (["compile_study", "sizes"], [100],
     r"compile_study\.experiments\.v2\.splits: splits=4 at shape m=100, k=100, n=100 "
     r"gives blocks \(25, 100, 25\): bm=25 must be a multiple of 8"),
    (["compile_study", "sizes"], [1048576],
     r"compile_study\.sizes\[0\]: 1048576 is greater than the maximum of 32768"),
    (["compile_study", "experiments", "v3", "blocks"], [[16384, 128, 128]],
     r"compile_study\.experiments\.v3\.blocks\[0\]\[0\]: 16384 is greater than the maximum of 8192"),
    (["compile_study", "experiments", "v3", "kernel"], "v9",
     r"compile_study\.experiments\.v3\.kernel: 'v9' is not one of \['v1', 'v2', 'v3', 'v5'\]"),
])
def test_study_errors_name_the_right_key(config, path, value, message):
    with pytest.raises(experiment_config.ConfigError, match=message):
        plan.validate(set_key(copy.deepcopy(config), path, value))


def test_schema_kernel_enums_come_from_the_kernel_registry():
    from tpu_matmul_repro.kernels import REGISTRY

    defs = experiment_config.schema()["$defs"]
    assert defs["kernel"]["enum"] == list(REGISTRY) == ["v1", "v2", "v3", "v5", "xla", "xla_highest"]
    assert defs["pallas_kernel"]["enum"] == [n for n, s in REGISTRY.items() if s.pallas]
    assert defs["blocked_kernel"]["enum"] == ["v3", "v5"]


def test_the_schemas_dtypes_are_the_kernels():
    """config/schema.yaml spells the dtypes out (its tolerances need one key each): they are
    kernels.checks.DTYPES, the list every other place reads."""
    from tpu_matmul_repro.kernels.checks import DTYPES

    schema = experiment_config.schema()
    assert schema["$defs"]["dtype"]["enum"] == list(DTYPES)
    tolerances = (schema["properties"]["correctness"]["properties"]["tolerance"],
                  schema["properties"]["measure"]["properties"]["tolerance"])
    for tolerance in tolerances:
        assert tolerance["required"] == list(tolerance["properties"]) == list(DTYPES)


def test_defaults_come_from_the_schema(config):
    del config["compile_study"]["timeout_s"]
    del config["compile_study"]["skip_dominated"]
    del config["measure"]
    filled = plan.validate(config)
    assert filled["compile_study"]["timeout_s"] == 300
    assert filled["compile_study"]["skip_dominated"] is True
    assert filled["measure"]["device"] == "auto" and filled["measure"]["samples"] == 10
    assert filled["measure"]["tolerance"]["int8"] == 0 and filled["measure"]["label"] is None
    assert filled["correctness"]["tpu_interpret"]["num_cores"] == 2  # given: kept
    assert "measure" not in config  # the caller's config is not modified


def test_one_plan_for_the_workflow_and_the_tests(config):
    from tpu_matmul_repro.experiments.core import codec
    from tpu_matmul_repro.experiments.measure.device import Device
    from tpu_matmul_repro.experiments.plan.plan import make_plan

    plan = make_plan(experiment_config.checked(config), device=Device("cpu", "cpu", "cpu", 1), label="t")
    assert plan.targets == ["v5e", "v6e"]
    assert {(t, e) for t, e, _, _ in plan.compile_jobs} == {(t, e) for t in ("v5e", "v6e")
                                                   for e in ("v1", "v2", "v3", "v4", "v5", "xla")}
    assert set(plan.measure) == {("xla", d) for d in ("float32", "bfloat16", "int8")}  # the CPU: XLA only
    assert plan.measured_file == "results/measured/cpu-t.parquet"
    # what a rule records is what its script decodes
    job = plan.compile_jobs[("v5e", "v4", "float32", "1of2")]
    assert codec.decode(codec.encode(job)) == job


def test_the_xla_baseline_is_one_job_per_target_with_every_dtype_in_order(config):
    """The baseline's per-dtype jobs are merged (plan/job_lists.merge_baseline_jobs): one Snakemake job per
    target, its cases those of the per-dtype jobs in the config's dtype order; the other jobs unchanged."""
    from tpu_matmul_repro.experiments.plan.job_lists import compile_jobs, compile_parts, merge_baseline_jobs
    from tpu_matmul_repro.experiments.plan.plan import make_plan

    parts = compile_parts(compile_jobs(config), config["compile_study"]["search_jobs"])
    merged = merge_baseline_jobs(parts)
    assert [k for k in merged if k[1] == "xla"] == [(t, "xla", "all", "1of1") for t in config["targets"]]
    for target in config["targets"]:
        per_dtype = [parts[(target, "xla", d, "1of1")] for d in config["compile_study"]["baseline_dtypes"]]
        assert merged[(target, "xla", "all", "1of1")].cases == tuple(c for j in per_dtype for c in j.cases)
    others = {k: j for k, j in parts.items() if k[1] != "xla"}
    assert {k: j for k, j in merged.items() if k[1] != "xla"} == others
    assert make_plan(experiment_config.checked(config)).compile_jobs == merged


def test_xla_at_highest_is_planned_at_its_sizes_and_checked(config):
    """compile_study.baseline_variants: XLA's float32 matmul at HIGHEST (kernel xla_highest) joins the
    float32 baseline job of every target at its own sizes, measure.sizes restricts it like the rest,
    and a kernel or dtype it cannot take is refused naming the key."""
    config = experiment_config.checked(config)
    jobs = job_lists.compile_jobs(config)
    variant = config["compile_study"]["baseline_variants"]["xla_highest"]
    for target in config["targets"]:
        highest = [c for c in jobs[(target, "xla", "float32")].cases if c.kernel == "xla_highest"]
        assert [c.m for c in highest] == variant["sizes"] == [2048, 4096, 8192]
        assert all(c.dtype == "float32" and c.m == c.k == c.n for c in highest)
        assert not [c for c in jobs[(target, "xla", "bfloat16")].cases if c.kernel == "xla_highest"]
    small = job_lists.compile_jobs(job_lists.with_sizes(config, [1024, 2048]))
    assert [c.m for c in small[("v5e", "xla", "float32")].cases if c.kernel == "xla_highest"] == [2048]
    for value, message in (
            ({"v3": {"dtypes": ["float32"], "sizes": [2048]}},
             r"compile_study\.baseline_variants: 'v3' is not one of \['xla_highest'\]"),
            ({"xla_highest": {"dtypes": ["bfloat16"], "sizes": [2048]}},
             r"compile_study\.baseline_variants\.xla_highest: dtype='bfloat16' not supported by kernel "
             r"'xla_highest'")):
        bad = set_key(copy.deepcopy(config), ["compile_study", "baseline_variants"], value)
        with pytest.raises(experiment_config.ConfigError, match=message):
            plan.validate(bad)


def test_block_search_runs_only_where_its_config_says(config):
    """search.targets and search.dtypes choose where a block search runs (all targets and dtypes when
    absent); elsewhere the experiment compiles its own blocks only. studies/search/config.yaml, merged as
    Snakemake merges a --configfile, searches everywhere. The figures follow the plan."""
    from snakemake.utils import update_config

    from tpu_matmul_repro.experiments.core.jobs import searched as is_searched
    from tpu_matmul_repro.experiments.plan.config import with_defaults
    from tpu_matmul_repro.experiments.plan.job_lists import compile_jobs
    from tpu_matmul_repro.figures.figure_specs import figure_specs

    def searched(jobs):
        return {key for key, job in jobs.items() if any(is_searched(c, job) for c in job.cases)}

    config["targets"] = ["v5e", "v6e"]
    default = with_defaults(copy.deepcopy(config))
    assert searched(compile_jobs(default)) == {("v5e", "v4", "float32"), ("v5e", "v5", "bfloat16")}
    jobs = compile_jobs(default)
    assert jobs[("v6e", "v5", "int8")].cases == jobs[("v6e", "v5", "int8")].raise_limits_for  # post blocks
    assert {n for n in figure_specs(default) if n.startswith("search_")} == {
        "search_v4_float32_v5e", "search_v5_bfloat16_v5e"}

    wide = copy.deepcopy(config)
    update_config(wide, yaml.safe_load((ROOT / "studies" / "search" / "config.yaml").read_text()))
    wide = with_defaults(wide)
    everywhere = {(t, e, d) for t in ("v5e", "v6e") for e, d in
                  (("v4", "float32"), ("v5", "bfloat16"), ("v5", "int8"))}
    assert searched(compile_jobs(wide)) == everywhere
    assert len([n for n in figure_specs(wide) if n.startswith("search_")]) == 6

    for spec in config["compile_study"]["experiments"].values():  # no search keys: everywhere too
        if "search" in spec:
            spec["search"].pop("targets", None), spec["search"].pop("dtypes", None)
    assert searched(compile_jobs(with_defaults(config))) == everywhere


def test_a_target_left_without_configurations_is_refused(config):
    """An experiment whose own blocks fit none of its sizes, searched on v5e only, has nothing to compile
    on v6e: refused with the key, not a silent gap (with a figure planned for it)."""
    config["targets"] = ["v5e", "v6e"]
    config["compile_study"]["experiments"]["v4"]["blocks"] = [[4096, 4096, 4096]]
    config["compile_study"]["experiments"]["v4"]["sizes"] = [2048]
    with pytest.raises(experiment_config.ConfigError,
                       match=r"compile_study\.experiments\.v4: no configuration fits sizes=\[2048\] "
                             r"\(dtype='float32'\) on target 'v6e', where its block search does not run"):
        plan.validate(config)


def test_search_dtypes_must_be_the_experiments(config):
    config["compile_study"]["experiments"]["v4"]["search"]["dtypes"] = ["bfloat16"]
    with pytest.raises(experiment_config.ConfigError,
                       match=r"compile_study\.experiments\.v4\.search\.dtypes: 'bfloat16' is not one of "
                             r"the experiment's dtypes \['float32'\]"):
        plan.validate(config)


def test_block_searches_split_by_bk(config):
    """Each block search runs as compile_study.search_jobs parts (at most one per bk value): together
    exactly the job's cases, in its order, each bk in one part only (a block shape's sizes share small
    grids, and a shape is dominated only by one of the same bk); the post's own configurations keep
    their raised-limit retries; experiments without a search stay one job."""
    from tpu_matmul_repro.experiments.core.jobs import searched
    from tpu_matmul_repro.experiments.plan.job_lists import compile_jobs, compile_parts

    jobs = compile_jobs(config)
    for parts in (1, 2, 3, 8):
        split = compile_parts(jobs, parts)
        for (target, experiment, dtype), job in jobs.items():
            mine = [j for (t, e, d, _), j in split.items() if (t, e, d) == (target, experiment, dtype)]
            names = sorted(p for t, e, d, p in split if (t, e, d) == (target, experiment, dtype))
            bks = len({c.bk for c in job.cases})
            expected = min(parts, bks) if any(searched(c, job) for c in job.cases) else 1
            assert names == [f"{i}of{expected}" for i in range(1, expected + 1)]
            assert sorted(map(repr, (c for j in mine for c in j.cases))) == sorted(map(repr, job.cases))
            assert (sorted(map(repr, (c for j in mine for c in j.raise_limits_for)))
                    == sorted(map(repr, job.raise_limits_for)))
            for j in mine:
                assert list(j.cases) == [c for c in job.cases if c in j.cases]
            owners = {}  # each bk (so each block shape, and the shapes that may dominate it) in one part
            for i, j in enumerate(mine):
                for c in j.cases:
                    assert owners.setdefault(c.bk, i) == i, (c, experiment)


def test_skip_dominated_reaches_every_compile_job(config):
    from tpu_matmul_repro.experiments.plan.job_lists import compile_jobs

    assert all(job.skip_dominated for job in compile_jobs(plan.validate(config)).values())
    config["compile_study"]["skip_dominated"] = False
    assert not any(job.skip_dominated for job in compile_jobs(plan.validate(config)).values())


def test_every_study_overlay_is_a_valid_config_that_changes_only_its_keys():
    """load_with_overlays merges as `--configfile` does (Snakemake's update_config): a key the overlay
    does not name keeps config/config.yaml's value, and each study overlay gives a valid config."""
    base = experiment_config.load_yaml(ROOT / "config" / "config.yaml")
    for overlay_path in sorted((ROOT / "studies").glob("*/config.yaml")):
        overlay = experiment_config.load_yaml(overlay_path)
        merged = experiment_config.load_with_overlays(overlay_path)
        assert {k: v for k, v in merged.items() if k not in overlay} == {
            k: v for k, v in base.items() if k not in overlay}, overlay_path
        plan.validate(merged)


def test_the_generations_overlay_switches_the_block_search_off():
    overlay = ROOT / "studies" / "generations" / "config.yaml"
    config = plan.validate(experiment_config.load_with_overlays(overlay))
    assert config["targets"] == ["v4", "v5e", "v5p", "v6e", "7x"]
    own = {(e, d): len(spec["blocks"]) * len(config["compile_study"]["sizes"])
           for e, spec in config["compile_study"]["experiments"].items() if "blocks" in spec
           for d in spec["dtypes"]}
    for (_, experiment, dtype), job in job_lists.compile_jobs(config).items():
        if (experiment, dtype) in own:  # the post's blocks only: no searched shape among the cases
            assert len(job.cases) <= own[(experiment, dtype)], (experiment, dtype)


def test_numbers_given_on_the_command_line_are_read_as_numbers(config):
    """`--config 'measure={samples: 6}'`: Snakemake passes a nested value as the text '6'."""
    config["measure"] = {"samples": "6", "min_sample_s": "1e-2", "profile": "false", "device": "off",
                         "label": "7"}
    measure = plan.validate(config)["measure"]
    assert (measure["samples"], measure["min_sample_s"], measure["profile"]) == (6, 0.01, False)
    assert (measure["device"], measure["label"]) == ("off", "7")  # text where the schema wants text
    config["measure"] = {"samples": "six"}
    with pytest.raises(experiment_config.ConfigError,
                       match=r"measure\.samples: 'six' is not of type 'integer'"):
        plan.validate(config)


# issue 39: config loading bounded before any walk of it

def alias_bomb(levels=9, width=10) -> str:
    """A few hundred bytes of YAML that stand for width**levels values (10^9 by default)."""
    lines = [f"a0: &a0 [{', '.join(['x'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def test_a_yaml_alias_bomb_is_refused_within_two_seconds(tmp_path):
    """It hung for over 90 s in check_finite, before the schema refused its unknown keys."""
    import time

    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())
    start = time.monotonic()
    with pytest.raises(experiment_config.ConfigError, match=rf"^{path}:\d+:\d+: more than 100000 values once "
                                                            r"its YAML aliases are expanded"):
        experiment_config.load_yaml(path)
    assert time.monotonic() - start < 2


def test_aliases_within_the_bound_still_load(tmp_path):
    path = tmp_path / "anchors.yaml"
    path.write_text("sizes: &s [512, 1024]\nagain: *s\n" + alias_bomb(levels=2))
    loaded = experiment_config.load_yaml(path)
    assert loaded["again"] == [512, 1024] and len(loaded["a2"]) == 10


@pytest.mark.parametrize("text, message", [
    ("measure: " + "[" * 5000 + "]" * 5000 + "\n", r":1:\d+: exceeded maximum nesting depth"),  # libyaml's
    ("measure: " + "[" * 40 + "]" * 40 + "\n", r":1:\d+: nested deeper than 32 levels"),
    ("a: &a [1, *a]\n", r":1:\d+: an alias inside the value it names"),
    ("", r": empty; a config file holds a mapping of keys"),
    ("- 1\n- 2\n", r": a config file holds a mapping of keys, not a list"),
    ("measure: {samples: [\n", r":2:1: did not find expected node content"),
])
def test_a_config_file_too_deep_empty_or_not_a_mapping_is_named_in_one_line(tmp_path, text, message):
    path = tmp_path / "overlay.yaml"
    path.write_text(text)
    with pytest.raises(experiment_config.ConfigError, match="^" + str(path) + message) as e:
        experiment_config.load_yaml(path)
    assert "\n" not in str(e.value)


def test_a_config_too_large_or_deep_in_memory_is_refused_before_any_walk(config):
    """What Snakemake passes in (--config, its merge of --configfile files) gets the same bounds."""
    import time

    shared = [0] * 10
    for _ in range(8):
        shared = [shared] * 10  # one list, 10^9 values when walked
    deep = []
    for _ in range(5000):
        deep = [deep]
    start = time.monotonic()
    with pytest.raises(experiment_config.ConfigError, match=r"more than 100000 values in the config"):
        experiment_config.checked(dict(config, measure=shared))
    assert time.monotonic() - start < 2
    deeper = r"^invalid config: measure(\[0\])+: nested deeper than 32 levels$"
    with pytest.raises(experiment_config.ConfigError, match=deeper):
        experiment_config.checked(dict(config, measure=deep))
    # --config 'measure=[[[...' arrives as text: read as YAML, it overflowed PyYAML's recursive parser
    shortened = r"^invalid config: measure: '\[\[\[.* … .*\]\]' is not of type 'object'$"
    with pytest.raises(experiment_config.ConfigError, match=shortened):
        experiment_config.checked(dict(config, measure="[" * 5000 + "]" * 5000))


@pytest.mark.parametrize("section", ["correctness", "measure"])
def test_every_tolerance_is_bounded(config, section):
    """correctness.tolerance had no upper bound: 1e300 switched every correctness check off."""
    config = experiment_config.with_defaults(config)
    config[section]["tolerance"]["float32"] = 1e300
    with pytest.raises(experiment_config.ConfigError,
                       match=rf"{section}\.tolerance\.float32: 1e\+300 is greater than the maximum of 1"):
        experiment_config.checked(config)
    config[section]["tolerance"]["float32"] = 1
    experiment_config.checked(config)


def test_every_tolerance_of_the_schema_has_a_maximum():
    def tolerances(node, path=()):
        if isinstance(node, dict):
            if path and path[-1] == "tolerance":
                yield path, node
            for key, value in node.items():
                yield from tolerances(value, (*path, key))

    found = list(tolerances(experiment_config.schema()["properties"]))
    assert len(found) == 2
    for path, node in found:
        for dtype in ("float32", "bfloat16"):
            assert node["properties"][dtype]["maximum"] == 1, (path, dtype)


@pytest.mark.parametrize("where", ["targets", "advice", "toolchain"])
def test_a_generation_the_libtpu_cannot_compile_is_refused_naming_it_and_the_libtpu(where):
    """data/tpu_generations.csv (tools/tpu_generations.py): jax knows TPU 8i, the pinned libtpu refuses it."""
    config = experiment_config.load_yaml(ROOT / "config" / "config.yaml")
    if where == "targets":
        config["targets"] = ["v5e", "8i"]
    elif where == "advice":
        config["advice"]["targets"] = ["8t"]
    else:
        config["toolchains"]["post"]["targets"] = ["8i"]
    refusal = (r"^[a-z._\[\]0-9]+: '8[it]': libtpu \d+\.\d+\.\d+(\.\d+)? cannot compile for TPU 8[it] "
               r"without a TPU \(.*Invalid TPU external name")
    with pytest.raises(experiment_config.ConfigError, match=refusal):
        experiment_config.checked(config)


@pytest.mark.parametrize("shape, targets, refused", [
    ([8192, 4096, 128256], None, ""),  # Llama 3's output layer: once refused here, answered by `advise`
    ([1, 1, 4_000_000_000], None, ""),  # 16 GB in bfloat16: within v5e's 17.2 GB
    ([1048576, 1048576, 128], None, "advice.shapes[0]: [1048576, 1048576, 128]: its bfloat16 operands and "
                                    "output need 2048.5 GiB, more than v5e's 16.0 GiB of HBM"),
    ([131072, 65536, 4096], ["v5p"], ""),
    ([131072, 65536, 4096], ["v5p", "v5e"], "more than v5e's 16.0 GiB of HBM"),
])
def test_advice_shapes_take_every_shape_the_advisor_takes_and_no_other(config, shape, targets, refused):
    """One bound, the advisor's (its operands and output fit each target's HBM), from one place."""
    from tpu_matmul_repro.advise.request import AdviceError, check_fits_hbm, parse_shape

    config["advice"] = dict(shapes=[shape], **({"targets": targets} if targets else {}))
    advised = targets or [t for t in config["targets"] if t != "v4"]
    advisor_refuses = []
    for target in advised:
        try:
            check_fits_hbm(parse_shape("x".join(map(str, shape))), "bfloat16", target)
        except AdviceError as e:
            advisor_refuses.append(str(e))
    if not refused:
        assert not advisor_refuses
        experiment_config.checked(config)
        return
    assert advisor_refuses
    with pytest.raises(experiment_config.ConfigError) as e:
        experiment_config.checked(config)
    assert refused in str(e.value) and "\n" not in str(e.value)
