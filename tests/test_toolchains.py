"""Toolchains: config checks, the compatibility layer under the project's jax, the compile worker run by
another Python, and an uninstallable toolchain (a clear error naming it; the other results intact).

Nothing here downloads: the failing install runs pip with --no-index.
"""
import copy
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tpu_matmul_repro.analysis.aggregate import combine
from tpu_matmul_repro.analysis.toolchain_rows import primary_rows
from tpu_matmul_repro.experiments.compile_study import toolchain_env
from tpu_matmul_repro.experiments.compile_study.toolchain_jobs import environment_marker, run_toolchain_jobs
from tpu_matmul_repro.experiments.compile_study.tpu_compile import Compiler
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.schema import ESTIMATE_STATUSES, KEY
from tpu_matmul_repro.experiments.plan import config as experiment_config
from tpu_matmul_repro.experiments.plan import job_lists, plan, toolchains
from tpu_matmul_repro.studies.then_and_now.analysis import agreement, missing_reason, then_and_now

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = ROOT / "data" / "published_v5e.csv"


@pytest.fixture
def config():
    return experiment_config.with_defaults(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()))


# --- the compatibility layer, under the project's jax ---------------------------------------------

def test_compiler_params_use_this_jax_s_name():
    from jax.experimental.pallas import tpu as pltpu

    from tpu_matmul_repro.kernels import compat

    params = compat.compiler_params(vmem_limit_bytes=7 * 2**20)
    assert isinstance(params, pltpu.CompilerParams) and params.vmem_limit_bytes == 7 * 2**20


def test_compiler_params_fall_back_to_the_old_name(monkeypatch):
    from jax.experimental.pallas import tpu as pltpu

    from tpu_matmul_repro.kernels import compat

    class TPUCompilerParams(dict):  # jax 0.4.36's name
        pass

    monkeypatch.delattr(pltpu, "CompilerParams")
    monkeypatch.setattr(pltpu, "TPUCompilerParams", TPUCompilerParams, raising=False)
    assert compat.compiler_params(vmem_limit_bytes=1) == TPUCompilerParams(vmem_limit_bytes=1)
    monkeypatch.delattr(pltpu, "TPUCompilerParams")
    with pytest.raises(ImportError, match=r"neither pltpu.CompilerParams nor pltpu.TPUCompilerParams"):
        compat.compiler_params()


@pytest.mark.compiler
def test_worker_runs_with_the_toolchain_s_python_and_environment(tmp_path):
    """A toolchain's Python (here a wrapper around this one that records its environment) runs the
    worker, with the toolchain's variables set and this process's TPU_LIBRARY_PATH removed (jax sets
    it on import; another jax would load this environment's libtpu)."""
    record = tmp_path / "env.txt"
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\nenv > {record}\nexec {sys.executable} \"$@\"\n")
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    os.environ.setdefault("TPU_LIBRARY_PATH", "/elsewhere/libtpu.so")
    with Compiler("v5e", python=str(python), env={"TOOLCHAIN_CHECK": "1"}, toolchain="wrapped") as compiler:
        result = compiler.compile(Case("v1", "float32", 1024, 1024, 1024))
    assert result["status"] == "ok", result["error"]
    seen = record.read_text()
    assert "TOOLCHAIN_CHECK=1" in seen and "TPU_LIBRARY_PATH=" not in seen


# --- configuration ----------------------------------------------------------------------------------

@pytest.mark.parametrize("toolchains_section, message", [
    ({"current": {"pipeline": True},
      "post": {"pins": {"jax": "latest", "jaxlib": "0.4.36", "libtpu": "0.0.5"}}},
     r"toolchains\.post\.pins\.jax: 'latest' does not match"),
    ({"current": {"pipeline": True},
      "post": {"pins": {"jax": ">=0.4", "jaxlib": "0.4.36", "libtpu": "0.0.5"}}},
     r"toolchains\.post\.pins\.jax: '>=0.4' does not match"),
    ({"current": {"pipeline": True}, "post": {"pins": {"jax": "0.4.36", "jaxlib": "0.4.36"}}},
     r"toolchains\.post\.pins: 'libtpu' is a required property"),
    ({"current": {"pipeline": True},
      "Post!": {"pins": {"jax": "0.4.36", "jaxlib": "0.4.36", "libtpu": "0.0.5"}}},
     r"toolchains: 'Post!' does not match"),
    ({"current": {"pipeline": True}, "post": {"pinz": {}}}, r"toolchains\.post: .*'pinz' was unexpected"),
    ({"current": {"pipeline": True},
      "post": {"pins": {"jax": "0.4.36", "jaxlib": "0.4.36", "libtpu": "0.0.5"}, "runs": "everything"}},
     r"toolchains\.post\.runs: 'everything' is not one of \['study', 'published'\]"),
    ({"current": {"pipeline": True},
      "post": {"pins": {"jax": "0.4.36", "jaxlib": "0.4.36", "libtpu": "0.0.5"},
               "runs": "published", "targets": ["v6e"]}},
     r"toolchains\.post\.targets: \['v6e'\]: runs: published compiles the post's configurations"),
    ({"post": {"pins": {"jax": "0.4.36", "jaxlib": "0.4.36", "libtpu": "0.0.5"}}},
     r"toolchains: exactly one toolchain must have pipeline: true .* found \[\]"),
    ({"current": {"pipeline": True}, "now": {"pipeline": True}},
     r"toolchains: exactly one toolchain must have pipeline: true .* found \['current', 'now'\]"),
    ({"current": {"pipeline": True, "pins": {"jax": "0.4.36", "jaxlib": "0.4.36", "libtpu": "0.0.5"}}},
     r"toolchains\.current: pipeline: true uses the pipeline's own environment .* drop pins="),
    ({"current": {"pipeline": True}, "post": {"runs": "published"}},
     r"toolchains\.post: needs pins \(jax, jaxlib, libtpu\) or pipeline: true"),
])
def test_bad_toolchains_name_key_and_value(config, toolchains_section, message):
    config = copy.deepcopy(config)
    config["toolchains"] = toolchains_section
    with pytest.raises(experiment_config.ConfigError, match=message):
        plan.validate(config)


def test_default_config_plans_the_post_s_configurations_in_each_older_era(config):
    parsed = toolchains.parse(config)
    assert toolchains.primary(config) == "current" and parsed["post"].requirements()[:3] == [
        "jax==0.4.36", "jaxlib==0.4.36", "libtpu==0.0.5"]
    assert parsed["mid2026"].requirements()[:3] == ["jax==0.10.2", "jaxlib==0.10.2", "libtpu==0.0.42.1"]
    jobs = job_lists.toolchain_jobs(config, PUBLISHED)
    assert {key[:2] for key in jobs} == {("post", "v5e"), ("mid2026", "v5e")}
    published = pd.read_csv(PUBLISHED, comment="#")
    for era in ("post", "mid2026"):
        pallas = [c for (t, *_), job in jobs.items() if t == era for c in job.cases if c.kernel != "xla"]
        assert len(pallas) == len(published[published.kernel != "xla"]) == 53
    # the post's own configurations: no block search, no raised limits, no static profile
    assert all(job.cases == job.raise_limits_for and not job.raised_limits_mib and not job.static_profile
               for job in jobs.values())
    # the pipeline's study is unchanged, and its jobs carry the pipeline toolchain's name
    assert {job.toolchain for job in job_lists.compile_jobs(config).values()} == {"current"}


def test_a_published_toolchain_is_one_job_per_target_a_studying_one_one_per_experiment():
    """toolchains.batches: the post's configurations (runs: published) compile as one Snakemake job per
    target, its jobs in the plan's order; a toolchain that runs the study (one serving 7x, say) keeps one
    job per (experiment, dtype), as parallel as the pipeline's own."""
    config = experiment_config.load_with_overlays(ROOT / "studies" / "generations" / "config.yaml")
    config["toolchains"]["libtpu52"] = {"pins": {"jax": "0.10.2", "jaxlib": "0.10.2", "libtpu": "0.0.52"},
                                        "estimates_for": ["7x"]}
    generations = plan.validate(config)
    parsed = toolchains.parse(generations)
    jobs = job_lists.toolchain_jobs(generations, PUBLISHED)
    batches = job_lists.toolchain_batches(jobs, parsed)
    assert batches[("post", "v5e", "all")] == tuple(j for (t, *_), j in jobs.items() if t == "post")
    assert [k for k in batches if k[0] == "post"] == [("post", "v5e", "all")]
    studied = {(t, target, f"{e}_{d}"): (j,) for (t, target, e, d), j in jobs.items() if t == "libtpu52"}
    assert studied and {k: b for k, b in batches.items() if k[0] == "libtpu52"} == studied


def test_a_config_without_toolchains_has_the_pipeline_s_only():
    ci = plan.load(ROOT / "config" / "config.ci.yaml")
    assert list(toolchains.parse(ci)) == ["current"] and job_lists.toolchain_jobs(ci, PUBLISHED) == {}


def test_new_pins_are_a_new_environment(config, tmp_path):
    config["toolchain_cache_dir"] = str(tmp_path)
    post = toolchains.parse(config)["post"]
    newer = toolchains.parse({**config, "toolchains": {**config["toolchains"], "post": {
        **config["toolchains"]["post"],
        "pins": {**config["toolchains"]["post"]["pins"], "libtpu": "0.0.6"}}}})["post"]
    assert toolchains.env_path(config, post).parent == tmp_path
    assert toolchains.env_path(config, post) != toolchains.env_path(config, newer)


def test_key_includes_the_toolchain():
    assert "toolchain" in KEY and "toolchain_error" in ESTIMATE_STATUSES


# --- an uninstallable toolchain ---------------------------------------------------------------------

BROKEN = toolchains.Toolchain(name="broken",
                              pins=(("jax", "0.0.0"), ("jaxlib", "0.0.0"), ("libtpu", "0.0.0")),
                              runs="published", targets=("v5e",), static_profile=False)


def test_builders_started_at_once_build_an_environment_once_and_the_others_reuse_it(tmp_path, monkeypatch):
    """Jobs of one toolchain, or runs in two clean clones, starting together: one builds while the
    others wait on the lock file (flock: one lock per open file, as between processes), then reuse its
    environment; each says which it did, and a later run reuses it too."""
    import threading
    import time

    builds = []

    def build(toolchain, path, pip_args, log):  # venv and pip, without the download
        builds.append(path)
        time.sleep(0.3)  # the others arrive while it builds
        (path / "bin").mkdir(parents=True)
        (path / "bin" / "python").write_text("")
        manifest = dict(toolchain=toolchain.name, path=str(path), python=str(path / "bin" / "python"),
                        versions={}, built_at="2026-12-02T13:03:23+00:00", build_s=16.4)
        (path / toolchain_env.MANIFEST).write_text(json.dumps(manifest))
        return manifest

    monkeypatch.setattr(toolchain_env, "_build", build)
    path, results = tmp_path / "toolchains" / "broken-abc", []
    builders = [threading.Thread(target=lambda: results.append(toolchain_env.ensure(BROKEN, path)))
                for _ in range(4)]
    for builder in builders:
        builder.start()
    for builder in builders:
        builder.join()
    assert builds == [path] and sorted(r[toolchain_env.BUILT] for r in results) == [False, False, False, True]
    said = sorted(toolchain_env.built_or_reused(r) for r in results)
    assert said[0] == (f"toolchain broken: environment built in 16 s at {path} (once per machine: later "
                       "runs and clean clones reuse it)")
    reused = f"toolchain broken: environment reused from {path}, built 2026-12-02T13:03:23+00:00"
    assert said[1:] == [reused] * 3
    assert not toolchain_env.ensure(BROKEN, path)[toolchain_env.BUILT] and builds == [path]


@pytest.mark.compiler
def test_uninstallable_toolchain_is_a_clear_error_and_leaves_no_environment(tmp_path):
    path = tmp_path / "cache" / "broken-abc"
    path.mkdir(parents=True)
    (path / "half-built").write_text("an earlier build that was killed")  # no manifest: never used
    assert toolchain_env.read_manifest(path) is None
    with pytest.raises(toolchain_env.ToolchainInstallError) as error:
        toolchain_env.ensure(BROKEN, path, pip_args=("--no-index", "--find-links", str(tmp_path)))
    message = str(error.value)
    assert "toolchain broken (jax==0.0.0, jaxlib==0.0.0, libtpu==0.0.0): pip install failed" in message
    assert "jax==0.0.0" in message and not path.exists()


@pytest.mark.compiler
def test_uninstallable_toolchain_gives_error_rows_and_the_rest_still_builds(tmp_path, table, capfd):
    import logging

    log = logging.getLogger("test")
    marker = tmp_path / "environment.json"
    manifest = environment_marker(BROKEN, tmp_path / "broken-abc", marker, log,
                                  pip_args=("--no-index", "--find-links", str(tmp_path)))
    assert manifest["status"] == "failed" and json.loads(marker.read_text())["status"] == "failed"
    assert "WARNING: toolchain broken" in capfd.readouterr().err  # said on the console, not only in the log

    config = experiment_config.with_defaults(
        {"targets": ["v5e"], "compile_study": {"sizes": [1024, 2048], "experiments": {}},
         "toolchains": {"current": {"pipeline": True},
                        "broken": {"pins": dict(BROKEN.pins), "runs": "published", "targets": ["v5e"]}}})
    jobs = job_lists.toolchain_jobs(config, PUBLISHED)
    rows = run_toolchain_jobs(jobs.values(), BROKEN, tmp_path / "broken-abc", marker, log)
    assert len(rows) == sum(len(job.cases) for job in jobs.values())
    assert (rows.status == "toolchain_error").all() and rows.error.str.contains("toolchain broken").all()
    assert (rows.toolchain == "broken").all() and (rows.jax_version == "0.0.0").all()

    # the pipeline toolchain's rows come through the table unchanged, and the report says why
    current = table[table.source == "estimate"].assign(toolchain="current")
    published = table[table.source == "published"]
    combined = combine([current, rows], published, toolchain="current")
    kept = primary_rows(combined, "current")
    assert len(kept[kept.source == "estimate"]) == len(current)
    assert missing_reason(combined, "broken").startswith("toolchain broken")

    from tpu_matmul_repro.experiments.plan import studies
    from tpu_matmul_repro.report import build

    studies.load(["then_and_now"])  # its section says it, as in a run whose config names the study
    html = build.render_html(combined, lang="en", config_yaml="", targets=["v5e"], figure_names=[],
                             correctness={"passed": 1, "total": 1}, primary_toolchain="current")
    assert ("Toolchain broken has no results in this run: toolchain broken (jax==0.0.0"
            in html.replace("\n", " "))


def test_then_and_now_compares_each_toolchain_with_the_post(table, tmp_path):
    """Two toolchains over the fixture's configurations: the older one agrees where the newer fails."""
    now = table[table.source == "estimate"].assign(toolchain="current")
    then = now.copy().assign(toolchain="post")
    oom = (then.kernel == "v5") & (then.bm == 1024) & (then.m == 2048)
    assert oom.any()
    then.loc[oom, "status"] = "ok"  # what the older compiler said, in this fixture
    combined = combine([now, then], table[table.source == "published"], toolchain="current")
    result = then_and_now(combined, "current")
    row = result[(result.kernel == "v5") & (result.bm == 1024) & (result.m == 2048)].iloc[0]
    assert row.published_status == "failed"
    assert row.current_status == "vmem_oom" and row.current_agrees == True  # noqa: E712 (a pandas boolean)
    assert row.post_status == "ok" and row.post_agrees == False  # noqa: E712
    assert agreement(result, "current")["agree"] == agreement(result, "post")["agree"] + 1
    # The report's section reads the study's file back: the same summaries, appendix and first page.
    from tpu_matmul_repro.studies.then_and_now.analysis import from_csv
    from tpu_matmul_repro.studies.then_and_now.section import comparison, first_page

    path = tmp_path / "then_and_now.csv"
    result.to_csv(path, index=False)
    read = from_csv(pd.read_csv(path))
    assert comparison(combined, read, "current", str) == comparison(combined, result, "current", str)
    assert first_page(read, "current", str) == first_page(result, "current", str)
    assert comparison(combined, read, "current", str)["rows"]  # the appendix was compared, not skipped


@pytest.mark.compiler
def test_the_compile_worker_imports_nothing_a_toolchain_lacks():
    """A toolchain's environment has jax, jaxlib, libtpu and their dependencies only: the worker side of
    the compile code must import without pandas or pyarrow (a module-level pandas import once made every
    compile of the post's toolchain fail)."""
    code = ("import sys\n"
            "for name in ('pandas', 'pyarrow', 'matplotlib', 'yaml', 'jsonschema'):\n"
            "    sys.modules[name] = None  # importing it now raises ImportError\n"
            "import experiments.compile_study.compile_worker, experiments.compile_study.tpu_compile\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            env=dict(os.environ, JAX_PLATFORMS="cpu"))
    assert result.returncode == 0, result.stderr[-2000:]


def test_a_compile_claim_s_verdict_names_each_compiler_that_checked_it(table):
    """The then-and-now study checks the post's feasibility claims under the other toolchains
    (then_and_now_claims.csv) and hands them to the report through Section.claims: each compile claim's
    verdict in the findings table names today's compiler and the post's ("differs with today's compiler;
    holds with the post's compiler"), and the claims section gets their rows; the core's claims.csv,
    alone, names today's only."""
    from tpu_matmul_repro.analysis.claims import claims_table, feasibility_claims, registry
    from tpu_matmul_repro.analysis.fitted_model import fit_model
    from tpu_matmul_repro.report import build, front
    from tpu_matmul_repro.report.sections import REGISTRY
    from tpu_matmul_repro.report.tables import toolchain_name
    from tpu_matmul_repro.studies.then_and_now import section
    from tpu_matmul_repro.studies.then_and_now.analysis import claims_then

    now = table[table.source == "estimate"].assign(toolchain="current")
    then = now.copy().assign(toolchain="post")
    then.loc[(then.kernel == "v5") & (then.bm == 1024) & (then.m == 2048), "status"] = "ok"
    combined = combine([now, then], table[table.source == "published"], toolchain="current")
    rows = primary_rows(combined, "current")
    core = claims_table(rows, fit_model(rows), "current")
    others = claims_then(combined, "current")
    assert set(others.toolchain) == {"post"} and list(others.claim_id) == list(feasibility_claims())
    shown = {r["claim"]: r["verdict"] for r in front.front_page(claims=core, fidelity=None, primary="current",
                                                                 gettext=str)["claims"]}
    wording = {c: claim.wording for c, claim in registry().items()}
    assert all(" with " not in shown[wording[c]] or c in feasibility_claims() for c in wording)
    page = front.front_page(claims=pd.concat([core, others], ignore_index=True), fidelity=None,
                            primary="current", gettext=str)
    verdicts = dict(zip(others.claim_id, others.verdict, strict=True))
    shown = {r["claim"]: r["verdict"] for r in page["claims"]}
    for claim_id, text in wording.items():  # a compile claim's verdict names each compiler, in one cell
        if claim_id in verdicts:
            post = toolchain_name("post", str)
            assert shown[text].endswith(f"{verdicts[claim_id]} with {post}"), shown[text]
            assert shown[text].startswith(f"{core.set_index('claim_id').verdict[claim_id]} with today's")
        else:
            assert " with " not in shown[text]
    assert REGISTRY["then-and-now"].claims is section.claims
    html = build.render_html(combined, lang="en", config_yaml="", targets=["v5e"], figure_names=[],
                             correctness={"passed": 1, "total": 1}, primary_toolchain="current", claims=core)
    assert html.count("with the post&#39;s compiler") == len(verdicts)
