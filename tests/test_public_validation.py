"""The timing model scored on the public measurements (analysis/public_validation.py): which rows are
modelled and why the others are not, the predictions as the pipeline models an estimate, the scores
recomputed from results/public_scores.csv as written, fidelity.csv's readers with the public rows in it,
and two real compiles."""
import math

import numpy as np
import pandas as pd
import pytest
from test_timing_model import synthetic_model, synthetic_table

from tpu_matmul_repro.analysis import public_validation as pv
from tpu_matmul_repro.analysis import timing_model as tm
from tpu_matmul_repro.analysis import validation
from tpu_matmul_repro.analysis.fitted_model import PUBLISHED, fit_model
from tpu_matmul_repro.analysis.public_measurements import load
from tpu_matmul_repro.experiments.core.atomic_write import write_csv_atomic
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.chips import CHIPS, chip
from tpu_matmul_repro.experiments.core.traffic import min_vmem_bytes
from tpu_matmul_repro.experiments.core.units import flops

# the module's fitted run and scores made once: every test of this file on one worker
pytestmark = pytest.mark.xdist_group("public_validation")


class StandInCompiler:
    """The Compiler's interface without libtpu: XLA's cycles 1.25 times its chip's peak rate, a Pallas
    grid's VMEM request two buffers of every block (and the accumulator once); counts its compiles."""

    cache = None

    def __init__(self):
        self.compiled = []

    def compile(self, case: Case, vmem_limit_bytes=None, options=None) -> dict:
        self.compiled.append(case)
        result = dict(status="ok", vmem_bytes=None, oom_limit_bytes=None, est_cycles=None, error="",
                      compile_s=0.0, prefetched=None)
        if case.facts.pallas:
            once = min_vmem_bytes(case)
            return result | dict(vmem_bytes=2 * once - case.bm * case.bn * 4, prefetched=0)
        c = chip(self.target)
        fastest = flops(case.m, case.k, case.n) / c.peak_flops[case.dtype] * c.clock_hz
        return result | dict(est_cycles=math.ceil(1.25 * fastest))


def stand_in_estimates(table) -> tuple[pd.DataFrame, dict]:
    jobs = pv.compile_jobs(table, timeout_s=60, toolchain="current")
    parts, compilers = [], {}
    for target, job in jobs.items():
        compiler = compilers[target] = StandInCompiler()
        compiler.target = target
        parts.append(pv.compile_estimates(job, compiler))
    return pd.concat(parts, ignore_index=True), compilers


@pytest.fixture(scope="module")
def public():
    return load()


@pytest.fixture(scope="module")
def run():
    """A run whose published numbers the model made with noise (tests/test_timing_model.py): the
    band is not zero."""
    return synthetic_table(noise=0.1, seed=3)


@pytest.fixture(scope="module")
def fits(run):
    return synthetic_model(noise=0.1, seed=3)


@pytest.fixture(scope="module")
def scored(public, run, fits, tmp_path_factory):
    estimates, compilers = stand_in_estimates(public)
    scores, fidelity = pv.score(run, estimates, fits, public)
    path = tmp_path_factory.mktemp("public") / "public_scores.csv"
    write_csv_atomic(scores, path)  # as the pipeline writes it
    return dict(scores=scores, fidelity=fidelity, written=pd.read_csv(path), estimates=estimates,
                compilers=compilers)


def test_every_row_is_modelled_or_says_why(public):
    plan = pv.planned(public)
    skipped = plan[plan.skip_reason != ""]
    assert len(plan) == len(public) and plan.case.notna().sum() + len(skipped) == len(plan)
    reasons = dict(zip(zip(skipped.source, skipped.variant, strict=True), skipped.skip_reason, strict=True))
    assert "replicated on 8 chips" in reasons[("jetstream-pytorch", "replicated_8_chips")]
    assert "manual DMA" in reasons[("pallas-tpu-tutorial", "manual_dma_lhs_once")]
    assert "fused ReLU" in reasons[("jax-docs", "fused_relu")]
    assert "transposed" in reasons[("jax-docs", "transpose_rhs")]
    # v4's XLA row returns float32 from bfloat16 inputs; the project's xla kernel returns bfloat16
    v4_xla = plan[(plan.generation == "v4") & (plan.kernel == "xla")]
    assert v4_xla.skip_reason.str.startswith("out dtype float32 differs").all()
    assert (plan.variant[plan.case.notna()] == "plain").all()


def test_kernels_map_to_the_projects_xla_and_v5(public):
    plan = pv.planned(public)
    modelled = plan[plan.case.notna()]
    assert {c.kernel for c in modelled.case[modelled.kernel == "xla"]} == {"xla"}
    pallas = modelled[modelled.kernel == "pallas"]
    assert len(pallas) and {c.kernel for c in pallas.case} == {"v5"}
    assert all((c.bm, c.bk, c.bn) == (r.bm, r.bk, r.bn) for c, r in zip(pallas.case, pallas.itertuples(),
                                                                         strict=True))


def test_out_dtypes_are_the_kernels(public):
    from tpu_matmul_repro.kernels.v5_accumulator import v5_out_dtype

    assert {d: str(v5_out_dtype(d)) for d in pv.OUT_DTYPE} == pv.OUT_DTYPE


def test_a_generation_without_a_chip_is_skipped_with_the_reason(public):
    other = public.head(2).assign(generation="v9")
    assert pv.planned(other).skip_reason.str.contains("no chip of it").all()


def test_one_plain_compile_job_per_generation_of_its_distinct_cases(public):
    jobs = pv.compile_jobs(public, timeout_s=60, toolchain="current")
    plan = pv.planned(public)
    assert set(jobs) == set(plan.generation[plan.case.notna()]) and set(jobs) <= set(CHIPS)
    for target, job in jobs.items():
        assert not job.static_profile and job.raised_limits_mib == () and job.target == target
        assert len(set(job.cases)) == len(job.cases) == plan.case[plan.generation == target].nunique()


def test_each_case_is_compiled_once_and_no_row_is_a_block_search(scored):
    for compiler in scored["compilers"].values():
        assert len(compiler.compiled) == len(set(compiler.compiled))
    est = scored["estimates"]
    assert (est.experiment == pv.EXPERIMENT).all() and not est.search.any()


def test_predictions_are_the_pipelines_model_of_the_rows_compile(scored, run, fits):
    """Device time for profiler-timed rows, device time plus call_seconds for host-timed rows, from the
    fit on the published numbers; the band as intervals.add_columns applies it (spread included)."""
    constants = fits.published.constants
    scores, est = scored["scores"], scored["estimates"]
    modelled = scores[scores.model_seconds.notna()]
    assert set(modelled.timing) == {pv.HOST, pv.DEVICE}
    for timing in (pv.HOST, pv.DEVICE):
        r = modelled[modelled.timing == timing].iloc[0]
        blocks = [None if pd.isna(b) else int(b) for b in (r.bm, r.bk, r.bn)]
        key = (r.generation, r.modelled_kernel, r["dtype"], int(r.m), int(r.k), int(r.n), *blocks)
        row = est.iloc[pv._key(est).index(key)]
        device = tm.device_seconds(tm.features(row.astype(object).where(row.notna(), np.nan)), constants)
        expected = device + (constants.call_seconds if timing == pv.HOST else 0.0)
        assert r.model_seconds == pytest.approx(expected, rel=1e-9)
        band = fits.band.for_size(r.m, r.k, r.n)[0.8]
        assert r.halfwidth80 >= band - 1e-12  # v5e's band for its size, widened by the refits' spread
    assert (modelled.model_fit == PUBLISHED).all()


def test_scores_recomputed_from_the_written_file(scored):
    """fidelity.csv's public rows follow from public_scores.csv alone: n, median |ln|, median ratio,
    coverage, the widest band, the rows left out."""
    written, fidelity = scored["written"], scored["fidelity"]
    assert len(written) == len(load())
    ok = written[written.model_seconds.notna()]
    log_ratio = np.log(ok.model_seconds / ok.measured_seconds)
    assert np.allclose(log_ratio, ok.log_ratio, atol=1e-5)
    # inside80 as the band says, but for rows within the CSV's rounding of a band's edge
    edge = np.minimum(abs(ok.measured_seconds / ok.lo80 - 1), abs(ok.measured_seconds / ok.hi80 - 1))
    inside = (ok.lo80 <= ok.measured_seconds) & (ok.measured_seconds <= ok.hi80)
    assert (inside == ok.inside80.astype(bool))[edge > 1e-5].all()
    checked = 0
    for f in fidelity.itertuples():
        mine = ok if f.target == pv.ALL else ok[ok.generation == f.target]
        if f.scope != pv.ALL:
            columns = dict(pv.SCOPES)[f.scope]
            key = mine[columns].astype(str).agg(", ".join, axis=1)
            mine = mine[key == f.group]
        assert f.n == len(mine)
        if not len(mine):
            continue
        errors = np.log(mine.model_seconds / mine.measured_seconds)
        assert f.median_abs_log_ratio == pytest.approx(np.median(np.abs(errors)), abs=1e-5)
        assert f.median_ratio == pytest.approx(np.exp(-np.median(errors)), rel=1e-5)
        assert f.coverage80 == pytest.approx(mine.inside80.astype(bool).mean())
        assert f.halfwidth80 == pytest.approx(mine.halfwidth80.max(), rel=1e-5)
        everyone = written if f.target == pv.ALL else written[written.generation == f.target]
        assert f.n_left_out == everyone.model_seconds.isna().sum()
        checked += 1
    assert checked > 20
    assert set(fidelity.compared_with) == {"public"} and set(fidelity.scope) == {pv.ALL, *dict(pv.SCOPES)}


def test_the_public_rows_keep_fidelity_csvs_columns(scored, run, fits):
    published = validation.fidelity_table(run, fits)
    assert list(published.columns) == pv.FIDELITY_COLUMNS == list(scored["fidelity"].columns)


def test_fidelity_readers_see_the_posts_rows_as_before(scored, run, fits, tmp_path):
    """headline (the report's fidelity table) and the report's band rows give the same with the public
    rows appended as without them."""
    from tpu_matmul_repro.report.tables import _fidelity_rows, band_rows

    published = validation.fidelity_table(run, fits)
    both = pd.concat([published, scored["fidelity"]], ignore_index=True)
    write_csv_atomic(both, tmp_path / "fidelity.csv")
    both = pd.read_csv(tmp_path / "fidelity.csv")
    assert validation.headline(both).keys() == validation.headline(published).keys()
    assert _fidelity_rows(both, str) and len(band_rows(both, str)) == len(band_rows(published, str))


def test_a_run_without_a_fit_scores_nothing_and_says_why(public, scored):
    small = synthetic_table()
    small = small[(small.source != "published") | (small.experiment == "v1")]
    scores, fidelity = pv.score(small, scored["estimates"], fit_model(small), public)
    assert scores.model_seconds.isna().all()
    plan = pv.planned(public)
    assert scores.skip_reason[plan.case.notna().to_numpy()].str.startswith("not fitted").all()
    assert (fidelity.n == 0).all() and (fidelity[fidelity.scope == pv.ALL].n_left_out > 0).all()


@pytest.mark.compiler
def test_real_compiles_of_two_public_rows(public, run, fits, tmp_path, monkeypatch):
    """The JAX guide's (512, 1024, 1024) Pallas kernel and XLA's matmul at 1024 on v5e, compiled by
    libtpu: XLA gets cost-model cycles, the Pallas grid a VMEM request between one and two buffers of
    its blocks, and both rows a prediction."""
    monkeypatch.setenv("TPU_MATMUL_REPRO_CACHE", str(tmp_path / "cache"))
    rows = public[(public.source == "jax-docs") & (public.variant == "plain") & (public.m == 1024)
                  & (public.kernel == "xla") | (public.source == "jax-docs") & (public.variant == "plain")
                  & (public.m == 1024) & (public.bm == 512)].reset_index(drop=True)
    assert len(rows) == 2
    (job,) = pv.compile_jobs(rows, timeout_s=300, toolchain="current").values()
    estimates = pv.compile_estimates(job)
    assert (estimates.status == "ok").all()
    xla, pallas = estimates[estimates.kernel == "xla"].iloc[0], estimates[estimates.kernel == "v5"].iloc[0]
    assert xla.est_cycles > 0 and pd.isna(pallas.est_cycles)
    case = Case("v5", "bfloat16", 1024, 1024, 1024, 512, 1024, 1024)
    once = min_vmem_bytes(case)
    assert once <= pallas.vmem_bytes <= 2 * once
    scores, _ = pv.score(run, estimates, fits, rows)
    assert scores.model_seconds.notna().all() and (scores.model_seconds > 0).all()


@pytest.mark.slow
def test_the_default_run_scores_them_and_the_config_key_turns_it_off(tmp_path):
    """One compile job per generation and the scores in the default run; none with the key off."""
    import re

    from test_workflow import make_workdir, snakemake

    workdir = make_workdir(tmp_path)

    def planned(*args) -> dict:
        result = snakemake(workdir, "--dry-run", *args)
        assert result.returncode == 0, result.stdout + result.stderr
        stats = result.stdout.split("Job stats:")[-1]
        return {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", stats, flags=re.M)}

    # the generations the run models (config.yaml's targets) among those the data names
    generations = set(pv.compile_jobs(load(), timeout_s=1, toolchain="current")) & {"v5e", "v6e"}
    on = planned()
    assert on["public_compiles"] == len(generations) == 2 and on["public_scores"] == 1
    off = planned("--config", "validation={public_measurements: false}")
    assert "public_compiles" not in off and "public_scores" not in off and off["summaries"] == 1
