"""The advisor: bad requests are one clear line before any work, ties within the interval are said to
be ties, and (compiler) a small non-square problem ranked end to end."""
import math

import pandas as pd
import pytest
from test_timing_model import TRUE

from tpu_matmul_repro.advise import candidates, cli, request, search, table
from tpu_matmul_repro.advise.model import Model
from tpu_matmul_repro.experiments.analysis import intervals

BAND = intervals.Band({0.8: math.log(1.15), 0.95: math.log(1.23)}, 61)
MODEL = Model(TRUE, BAND, "test constants")


@pytest.mark.parametrize("argv, message", [
    (["8192x4096"], "shape '8192x4096': expected MxKxN in whole numbers"),
    (["8192x4000x14336"], "shape '8192x4000x14336': k=4000 is not a multiple of 128"),
    (["0x128x128"], "m=0 is not from 1 to 32768"),
    (["1024x1024x1024", "--dtype", "float8"], "--dtype 'float8': kernel v5 takes one of"),
    (["1024x1024x1024", "--target", "v9"], "--target 'v9': expected one of v5e, v6e, v5p, 7x"),
    (["1024x1024x1024", "--target", "v4"], "--target 'v4': expected one of"),
    (["1024x1024x1024", "--kernel", "v2"], "--kernel 'v2': expected a blocked kernel"),
])
def test_a_bad_request_is_one_clear_line(argv, message, capsys, monkeypatch):
    monkeypatch.setattr(search, "search", lambda *a, **k: pytest.fail("work started"))
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def row(bm, seconds, status="ok"):
    return dict(target="v5e", kernel="v5", dtype="bfloat16", m=4096, k=4096, n=4096, bm=bm, bk=512, bn=512,
                status=status, vmem_bytes=4 << 20, vmem_limit_bytes=16 << 20, oom_limit_bytes=None,
                model_device_seconds=seconds, model_post_seconds=None if seconds is None else seconds + 1e-4,
                model_device_tflops=None, model_post_tflops=None, est_cycles=1, tflops=None, error="",
                vmem_method="compiled", model_basis="compiler cycles", xla_estimate_method="")


def test_ties_within_the_interval_are_said_to_be_ties():
    rows = pd.DataFrame([row(512, 1.00e-3), row(256, 1.14e-3), row(1024, 1.16e-3),
                         row(2048, None, "vmem_oom")])
    work = 2 * 4096**3
    rows["model_device_tflops"] = work / rows.model_device_seconds / 1e12
    rows["model_post_tflops"] = work / rows.model_post_seconds / 1e12
    ranked = table.ranked(rows, pd.DataFrame(columns=rows.columns), MODEL, "v5e").set_index("bm")
    assert ranked["rank"].dropna().to_dict() == {512: 1, 256: 2, 1024: 3}
    assert pd.isna(ranked.loc[2048, "rank"])
    assert ranked.loc[256, "tie"].startswith("tie with #1")  # x1.14 < x1.15
    assert ranked.loc[1024, "tie"] == ""  # x1.16 > x1.15
    assert ranked.loc[512, "tie"] == ""
    assert ranked.loc[512, "model_device_ms_lo80"] < 1.0 < ranked.loc[512, "model_device_ms_hi80"]
    assert "out of VMEM" in ranked.loc[2048, "note"]
    assert (ranked.model_device_tflops_hi95.dropna() <= 197.0).all()  # the band stops at v5e's peak


def test_candidates_follow_the_mxu_width_and_divide_the_shape():
    v6e = candidates.candidates("v5", "bfloat16", (8192, 4096, 14336), "v6e")
    assert {c.bm for c in v6e} == {256, 512, 1024, 2048}
    assert all(14336 % c.bn == 0 and c.bn % 256 == 0 for c in v6e)
    assert candidates.edges(384, 256) == [128]  # no MXU-wide block divides it: lane-wide ones
    assert candidates.edges(128, 256) == [128]


@pytest.mark.compiler
def test_a_small_non_square_problem_is_ranked_end_to_end():
    rows, xla = search.search((1024, 512, 2048), "bfloat16", "v5e", "v5", MODEL,
                              dict(toolchain="current", static_profile=True),
                              dict(timeout_s=300, profile_max_steps=16))
    ranked = table.ranked(rows, xla, MODEL, "v5e")
    ok = ranked[(ranked.kernel == "v5") & (ranked.status == "ok")]
    assert len(ok) and list(ok["rank"]) == list(range(1, len(ok) + 1))
    assert (ok.model_device_ms.diff().dropna() >= 0).all()
    assert (ok.model_device_ms_lo80 < ok.model_device_ms).all()
    assert (ok.model_device_ms < ok.model_device_ms_hi80).all()
    xla = ranked[ranked.kernel == "xla"]
    assert len(xla) == 1 and xla.model_device_ms.notna().all()
    assert set(ranked.status) <= {"ok", "vmem_oom", search.PRUNED}
    text = table.text(ranked, ["header"])
    assert "XLA jnp.matmul" in text and "(" in text


def test_the_advice_overlay_is_a_valid_config():
    from pathlib import Path

    import yaml

    from tpu_matmul_repro.experiments.plan.config import checked, load_yaml

    root = Path(__file__).resolve().parent.parent
    config = load_yaml(root / "config" / "config.yaml")
    config["advice"].update(yaml.safe_load((root / "config" / "advice.yaml").read_text())["advice"])
    advice = checked(config)["advice"]
    assert len(advice["shapes"]) == 8 and advice["dtype"] == "bfloat16" and advice["kernel"] == "v5"
    for shape in advice["shapes"]:
        request.parse_shape("x".join(map(str, shape)))  # every one a shape the advisor takes


def test_the_model_is_read_from_a_pipeline_run_and_cached_by_its_inputs(tmp_path, monkeypatch):
    import dataclasses

    from tpu_matmul_repro.advise import model as advisor_model
    from tpu_matmul_repro.experiments.analysis import timing_model as tm

    results = tmp_path / "results"
    results.mkdir()
    assert advisor_model.from_results(results) is None  # nothing there: not a model
    pd.DataFrame([dict(fit="published v5e", constant=p, value=getattr(TRUE, p)) for p in tm.PARAMS]
                 + [dict(fit="measured v5e run1", constant=p, value=0.5) for p in tm.PARAMS]).to_csv(
        results / "timing_model.csv", index=False)
    pd.DataFrame([dict(validation="leave one experiment out", scope="all", group="all", n=61,
                       halfwidth80=0.1366, halfwidth95=0.2037),
                  dict(validation="leave one size out", scope="all", group="all", n=61,
                       halfwidth80=None, halfwidth95=None)]).to_csv(results / "fidelity.csv", index=False)
    found = advisor_model.from_results(results)
    assert found.constants == TRUE  # the published fit's, never a measured one
    assert found.band.halfwidth == {0.8: 0.1366, 0.95: 0.2037} and found.band.n == 61
    monkeypatch.setenv("TPU_MATMUL_REPRO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(advisor_model, "fitted", lambda config: dataclasses.replace(found, source="fitted"))
    versions = {"jax_version": "x", "libtpu_version": "y"}
    first = advisor_model.load({}, tmp_path / "none", versions)
    assert first.source == "fitted"
    monkeypatch.setattr(advisor_model, "fitted", lambda config: pytest.fail("fitted again"))
    again = advisor_model.load({}, tmp_path / "none", versions)
    assert again.constants == TRUE and "cache" in again.source
    assert advisor_model.cached({**versions, "libtpu_version": "z"})[0] is None  # another compiler: refit
