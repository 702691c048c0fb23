"""The opt-in history: the release list read from jax's metadata, the bisection (with a fake compiler:
no pip, no libtpu), its tables and figure, and that the default run never plans it."""
import logging
import math
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.plan import config as experiment_config
from tpu_matmul_repro.experiments.plan import toolchains as toolchain_plan
from tpu_matmul_repro.studies.history import releases
from tpu_matmul_repro.studies.history.bisect import Answer, bisect
from tpu_matmul_repro.studies.history.probes import (
    RELEASE_ENVIRONMENT,
    ReleaseCompiler,
    Settings,
    release_toolchain,
)
from tpu_matmul_repro.studies.history.releases import Release
from tpu_matmul_repro.studies.history.run import run_history

ROOT = Path(__file__).resolve().parents[3]  # the repository
DATA = Path(__file__).resolve().parents[1] / "data"

# What jax 0.4.36's and 0.5.2's wheels say (trimmed): an exact pin next to libtpu-nightly, then a
# range and a wildcard that resolve to the highest release on the index.
METADATA_0_4_36 = """Metadata-Version: 2.1
Name: jax
Version: 0.4.36
Requires-Dist: jaxlib<=0.4.36,>=0.4.36
Requires-Dist: numpy>=1.24
Requires-Dist: jaxlib==0.4.35; extra == "ci"
Requires-Dist: jaxlib<=0.4.36,>=0.4.36; extra == "tpu"
Requires-Dist: libtpu-nightly==0.1.dev20241010+nightly.cleanup; extra == "tpu"
Requires-Dist: libtpu==0.0.5; extra == "tpu"
Requires-Dist: requests; extra == "tpu"
Requires-Dist: jaxlib==0.4.36; extra == "cuda"
"""
METADATA_0_5_2 = """Name: jax
Version: 0.5.2
Requires-Dist: jaxlib<=0.5.2,>=0.5.1; extra == "tpu"
Requires-Dist: libtpu==0.0.10.*; extra == "tpu"
Requires-Dist: requests; extra == "tpu"
"""
METADATA_NIGHTLY_ONLY = """Name: jax
Version: 0.4.30
Requires-Dist: jaxlib==0.4.30; extra == "tpu"
Requires-Dist: libtpu-nightly==0.1.dev20240617; extra == "tpu"
"""
ON_INDEX = {"jaxlib": {"0.4.30", "0.4.35", "0.4.36", "0.5.1", "0.5.3"},
            "libtpu": {"0.0.5", "0.0.10", "0.0.10.1", "0.0.11"}}


# --- the release list ----------------------------------------------------------------------------

def test_an_exact_pin_is_read_and_libtpu_nightly_is_noted():
    r = releases.release_from_metadata("0.4.36", METADATA_0_4_36, on_index=ON_INDEX, jax_date="2024-12-05")
    assert (r.jax, r.jaxlib, r.libtpu, r.installable) == ("0.4.36", "0.4.36", "0.0.5", True)
    assert r.libtpu_requirement == "==0.0.5" and "libtpu-nightly" in r.note


def test_ranges_and_wildcards_resolve_to_what_pip_installs():
    r = releases.release_from_metadata("0.5.2", METADATA_0_5_2, on_index=ON_INDEX)
    assert (r.jaxlib, r.libtpu, r.installable) == ("0.5.1", "0.0.10.1", True)  # no jaxlib 0.5.2 exists
    assert (r.jaxlib_requirement, r.libtpu_requirement) == ("<=0.5.2,>=0.5.1", "==0.0.10.*")


def test_a_release_without_an_installable_libtpu_is_kept_with_the_reason():
    nightly = releases.release_from_metadata("0.4.30", METADATA_NIGHTLY_ONLY, on_index=ON_INDEX)
    assert not nightly.installable and nightly.libtpu is None
    assert "names no libtpu (only libtpu-nightly==0.1.dev20240617)" in nightly.note
    missing = releases.release_from_metadata("0.4.36", METADATA_0_4_36,
                                             on_index={**ON_INDEX, "libtpu": {"0.0.4"}})
    assert not missing.installable and "no libtpu on the package index" in missing.note


def test_between_keeps_releases_in_version_order_without_prereleases():
    versions = ["0.10.2", "0.4.35", "0.9.0.1", "0.4.36", "0.10.0rc1", "0.9.0", "0.10.3"]
    assert releases.between(versions, "0.4.36", "0.10.2") == ["0.4.36", "0.9.0", "0.9.0.1", "0.10.2"]


def test_release_list_round_trips(tmp_path):
    listed = [releases.release_from_metadata("0.4.36", METADATA_0_4_36, on_index=ON_INDEX),
              releases.release_from_metadata("0.4.30", METADATA_NIGHTLY_ONLY, on_index=ON_INDEX)]
    releases.write(listed, tmp_path / "r.csv", "where it came from\nsecond line")
    assert (tmp_path / "r.csv").read_text().startswith("# where it came from\n# second line\n")
    assert releases.read(tmp_path / "r.csv") == [listed[1], listed[0]]  # oldest first


def test_the_tracked_list_spans_the_two_toolchains():
    listed = releases.read(DATA / "releases.csv")
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    post = config["toolchains"]["post"]["pins"]
    assert listed[0].pins() == {p: post[p] for p in ("jax", "jaxlib", "libtpu")}
    text = (ROOT / "requirements.txt").read_text()
    requirements = dict(re.findall(r"^(jax|jaxlib|libtpu)==([^\s;]+)", text, re.MULTILINE))
    assert releases.probed(listed)[-1].pins() == requirements
    # a newer jax whose libtpu the index lacks is listed, not probed
    assert all(not r.installable and "no libtpu" in r.note for r in listed[len(releases.probed(listed)):])


# --- the bisection -------------------------------------------------------------------------------

A, B, C = Answer("ok", 9_515_008), Answer("vmem_oom", 18_874_368), Answer("vmem_oom", 20_000_000)


def probing(values):
    calls = []

    def answer(i):
        calls.append(i)
        return values[i]
    return answer, calls


@pytest.mark.parametrize("change", range(1, 24))
def test_bisection_names_the_first_changed_release(change):
    values = [A] * change + [B] * (24 - change)
    answer, calls = probing(values)
    found = bisect(len(values), answer)
    assert (found.first_changed, found.last_unchanged, found.exact, found.one_step) == (change, change - 1,
                                                                                       True, True)
    assert len(calls) == len(set(calls)) <= 2 + math.ceil(math.log2(22))  # each release asked once


def test_a_figure_that_changed_twice_is_reported_not_hidden():
    values = [A, A, A, C, C, C, B, B]
    found = bisect(len(values), probing(values)[0])
    assert found.first_changed == 3 and found.one_step is False
    assert "not one step" in found.note and "20000000" in found.note
    assert {i: a.value for i, a in found.probed.items()}[3] == C.value


def test_an_uninstallable_release_is_skipped_for_its_neighbours():
    broken = Answer("toolchain_error", error="pip install failed")
    values = [A, A, A, broken, B, B, B, B]  # 3 is the first middle tried
    found = bisect(len(values), probing(values)[0])
    assert found.first_changed == 4 and found.last_unchanged == 2
    assert found.untested_between == [3] and not found.exact and "gave no VMEM figure" in found.note
    assert found.probed[3].status == "toolchain_error"


def test_no_change_and_unusable_endpoints_bisect_nothing():
    answer, calls = probing([A, B, A])
    assert bisect(3, answer).first_changed is None and calls == [0, 2]
    answer, calls = probing([Answer("compile_error"), A, B])
    assert "endpoint" in bisect(3, answer).note and calls == [0, 2]


# --- environments, and the whole run with a fake compiler ----------------------------------------

def test_a_release_reuses_a_configured_toolchain_with_exactly_its_versions():
    config = experiment_config.with_defaults(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()))
    configured = toolchain_plan.parse(config)
    listed = releases.read(DATA / "releases.csv")
    assert release_toolchain(listed[0], configured).name == "post"
    assert release_toolchain(releases.probed(listed)[-1], configured).pipeline  # requirements.txt's
    middle = release_toolchain(listed[5], configured)
    assert middle.name == listed[5].name and dict(middle.pins) == listed[5].pins()
    assert middle.environment == RELEASE_ENVIRONMENT


class FakeCompiler(ReleaseCompiler):
    """Answers from a table instead of libtpu: vmem[case][release index] (None: not installable)."""

    def __init__(self, listed, vmem):
        super().__init__(listed, {"toolchains": None, "targets": ["v5e"]},
                         Settings("v5e", (2048,), 60))
        self.vmem, self.compiled = vmem, []

    def _compile(self, index, by_experiment):
        for cases in by_experiment.values():
            for case in cases:
                self.compiled.append((index, case))
                value = self.vmem[case][index]
                status = "toolchain_error" if value is None else "ok" if value <= 16 << 20 else "vmem_oom"
                self.rows[(index, case)] = dict(status=status, vmem_bytes=value, vmem_limit_bytes=16 << 20,
                                                jax_version=self.releases[index].jax, git_sha="abc")


def test_run_bisects_only_what_changed_and_compiles_each_pair_once():
    listed = [Release(f"0.{i}.0", f"0.{i}.0", f"0.0.{i}", jax_date=f"2025-0{i + 1}-01") for i in range(8)]
    v2 = Case("v2", "float32", 2048, 2048, 2048, 512, 2048, 512)
    v4 = Case("v3", "float32", 2048, 2048, 2048, 512, 1024, 1024)
    same = Case("v3", "float32", 2048, 2048, 2048, 128, 128, 128)
    mib = 1 << 20
    compiler = FakeCompiler(listed, {
        v2: [9 * mib] * 5 + [18 * mib] * 3,
        v4: [8 * mib] * 5 + [16 * mib + 4] * 3,
        same: [1 * mib] * 8,
    })
    vmem, first, after = run_history(compiler, [("v2", v2), ("v4", v4), ("v3", same)],
                                     logging.getLogger("test"))
    assert len(compiler.compiled) == len(set(compiler.compiled))
    assert set(first.label) == {"v2 N = 4, 2048", "v4 (512, 1024, 1024), 2048"}
    assert (first.first_changed_jax == "0.5.0").all() and (first.last_unchanged_jax == "0.4.0").all()
    assert first.exact.all() and first.one_step.all()
    assert first.first_changed_jax_date.eq("2025-06-01").all()
    # every probed release has both changed configurations; the unchanged one only the endpoints
    assert vmem.groupby("release_index").label.nunique().eq(2).all()
    assert set(vmem.release_index) == set(i for i, c in compiler.compiled if c == v2)
    assert (vmem[vmem.release_index == 7].status == "vmem_oom").all()
    # nothing changed after the first change: every configuration compared at 0.5.0 and 0.7.0
    assert len(after) == 3 and (after.since_jax == "0.5.0").all() and (after.last_jax == "0.7.0").all()
    assert not after.verdict_changed.any() and not after.bytes_changed.any()


def test_a_verdict_that_changed_again_after_the_first_change_is_reported():
    """The endpoints say ok -> out of VMEM for one configuration; another went out of VMEM with it and
    fits again in the last release (the same at both endpoints, so never bisected)."""
    listed = [Release(f"0.{i}.0", f"0.{i}.0", f"0.0.{i}") for i in range(8)]
    v2 = Case("v2", "float32", 2048, 2048, 2048, 512, 2048, 512)
    back = Case("v3", "float32", 2048, 2048, 2048, 512, 1024, 1024)
    mib = 1 << 20
    compiler = FakeCompiler(listed, {v2: [9 * mib] * 3 + [18 * mib] * 5,
                                     back: [8 * mib] * 3 + [17 * mib] * 4 + [8 * mib]})
    _, first, after = run_history(compiler, [("v2", v2), ("v4", back)], logging.getLogger("test"))
    assert list(first.label) == ["v2 N = 4, 2048"] and (first.first_changed_jax == "0.3.0").all()
    changed = after[after.verdict_changed]
    assert list(changed.label) == ["v4 (512, 1024, 1024), 2048"]
    assert (changed.since_status.iloc[0], changed.last_status.iloc[0]) == ("vmem_oom", "ok")


# --- the figure ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_figure_draws_probed_releases_only_in_both_languages(tmp_path):
    from tpu_matmul_repro.figures.style import save, use_style
    from tpu_matmul_repro.studies.history.figure import plot_history, provenance

    listed = releases.read(DATA / "releases.csv")
    mib = 1 << 20
    vmem = pd.DataFrame([
        dict(release_index=i, jax=listed[i].jax, label="v2 N = 4, 2048", status=s, vmem_bytes=v,
             vmem_limit_bytes=16 * mib, installed_jax=listed[i].jax, installed_libtpu=listed[i].libtpu,
             git_sha="abc")
        for i, s, v in [(0, "ok", 9 * mib), (11, "ok", 9 * mib), (17, "vmem_oom", 18 * mib),
                        (23, "vmem_oom", 18 * mib), (5, "toolchain_error", None)]])
    first = pd.DataFrame([dict(label="v2 N = 4, 2048", first_changed_jax=listed[17].jax,
                               first_changed_libtpu=listed[17].libtpu, first_changed_vmem_bytes=18 * mib)])
    for lang in ("en", "zh"):
        use_style(lang)
        with warnings.catch_warnings():  # the failed probe's note too: every glyph in the language's fonts
            warnings.filterwarnings("error", message=".*Glyph.*missing.*")
            fig = plot_history(vmem, first, listed, lang)
            lines = fig.axes[0].get_lines()
            drawn = sum(len(line.get_xdata()) for line in lines if line.get_marker() in "ox")
            assert drawn == 4  # four probes with a figure, four points: nothing between them
            info = provenance(vmem, listed, lang, "title")
            paths = save(fig, tmp_path / f"history_vmem.{lang}", info)
        assert all(p.stat().st_size > 0 for p in paths)
    assert "5 of 30" in provenance(vmem, listed, "en", "t")["caption"]


# --- the workflow ----------------------------------------------------------------------------------

def planned_rules(workdir: Path, *targets: str) -> set[str]:
    """The rules of the jobs `snakemake -n` plans (read from its "rule NAME:" lines)."""
    result = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "-n",
                             *targets], cwd=workdir, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return set(re.findall(r"^(?:local)?rule (\w+):$", result.stdout, re.MULTILINE))


@pytest.mark.compiler
def test_history_is_opt_in(tmp_path):
    import shutil

    shutil.copytree(ROOT / "config", tmp_path / "config")
    default = planned_rules(tmp_path)
    assert "compile_study_job" in default and not any(rule.startswith("history") for rule in default)
    history = planned_rules(tmp_path, "history")
    assert {"history_bisect", "history_figure", "history"} <= history
    assert "compile_study_job" not in history  # needs no default run first


# --- an older libtpu than its jax: the Mosaic IR version -----------------------------------------

def test_the_ir_version_libtpu_reads_is_taken_from_its_refusal():
    from tpu_matmul_repro.kernels import compat

    message = ("XlaRuntimeError: INTERNAL: Failed to deserialize the Mosaic module: INTERNAL: Unsupported "
               "version: expected <= 7 but got 8\nat location: loc(unknown)")
    assert compat.readable_mosaic_ir_version(message) == 7
    assert compat.readable_mosaic_ir_version("Scoped allocation with size 18.00M and limit 16.00M") is None


def test_a_refused_ir_version_is_compiled_again_at_the_readable_one(monkeypatch):
    from jax._src import tpu_custom_call

    from tpu_matmul_repro.experiments.compile_study import compile_worker
    from tpu_matmul_repro.experiments.core import compiler_output

    # jax's own choice off a TPU host: the newest version (None); monkeypatch restores jax's function
    monkeypatch.setattr(tpu_custom_call, "get_ir_version", lambda ctx: None)
    attempts = []

    def compile_text(case, limit, options=None):
        attempts.append(tpu_custom_call.get_ir_version(None))
        if attempts[-1] != 7:
            raise RuntimeError("Unsupported version: expected <= 7 but got 8")
        return "hlo"

    monkeypatch.setattr(compile_worker, "compile_text", compile_text)
    monkeypatch.setattr(compiler_output, "vmem_bytes_used", lambda text: 123)
    monkeypatch.setattr(compiler_output, "prefetched_operands", lambda text: 0)
    case = Case("v3", "float32", 256, 256, 256, 128, 128, 128)
    result = compile_worker.compile_in_worker(case, None, False)
    assert (result["status"], result["vmem_bytes"]) == ("ok", 123) and attempts[-1] == 7
    assert compile_worker.compile_in_worker(Case("v3", "float32", 256, 256, 256, 128, 128, 128), None,
                                    False)["status"] == "ok" and attempts[-1] == 7  # kept for the worker
