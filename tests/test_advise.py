"""The advisor: bad requests are one clear line before any work, ties within the interval are said to
be ties, and (compiler) a small non-square problem ranked end to end."""
import math
from pathlib import Path

import pandas as pd
import pytest
import runs
from test_timing_model import TRUE

from tpu_matmul_repro.advise import candidates, cli, request, search
from tpu_matmul_repro.advise import ranking as table
from tpu_matmul_repro.advise.model import Model
from tpu_matmul_repro.analysis import intervals

ROOT = Path(__file__).resolve().parent.parent
BAND = intervals.Band({0.8: math.log(1.15), 0.95: math.log(1.23)}, 61)
MODEL = Model(TRUE, BAND, "test constants")


@pytest.mark.parametrize("argv, message", [
    (["8192x4096"], "shape '8192x4096': expected MxKxN, three whole numbers joined by x"),
    (["0x128x128"], "shape '0x128x128': m=0: each dimension is a whole number from 1"),
    (["²x128x128"], "shape '²x128x128': m='²' is not a whole number in the digits 0-9"),
    (["128x١٢٨x128"], "k='١٢٨' is not a whole number in the digits 0-9"),
    (["-1x128x128"], "shape '-1x128x128': m=-1 is negative"),
    (["128x-128x128"], "shape '128x-128x128': k=-128 is negative"),
    (["1.5x128x128"], "m='1.5' is not a whole number"),
    (["1048576x1048576x128"], "need 2048.5 GiB, more than v5e's 16.0 GiB of HBM"),
    (["1024x1024x1024", "--vmem-limit", "200MiB"], "--vmem-limit 200 MiB: more than v5e's physical VMEM"),
    (["1024x1024x1024", "--vmem-limit", "8MiB"], "below v5e's default scoped limit of 16 MiB"),
    (["1024x1024x1024", "--vmem-limit", "32 parsecs"], "--vmem-limit '32 parsecs': expected a size"),
    (["1024x1024x1024", "--vmem-limit", "-5MiB"], "--vmem-limit '-5MiB': expected a size"),
    (["1024x1024x1024", "--vmem-limit", "0"], "--vmem-limit '0': a limit of nothing: give a size"),
    (["1024x1024x1024", "--dtype", "float8"], "--dtype 'float8': kernel v5 takes one of"),
    (["1024x1024x1024", "--target", "v9"], "--target 'v9': expected one of v5e, v5p, v6e, 7x"),
    (["1024x1024x1024", "--target", "v4"], "--target 'v4': expected one of"),
    (["1024x1024x1024", "--kernel", "v2"], "--kernel 'v2': expected a blocked kernel"),
    (["1024x1024x1024", "--bogus"], "unrecognized arguments: --bogus"),
    (["--model", "llama3-8b"], "--model llama3-8b: give --tokens"),
    (["--model", "gpt-9", "--tokens", "8"], "--model 'gpt-9': expected one of llama3-8b"),
    (["--model", "llama3-8b", "--tokens", "-8"], "--tokens '-8': expected a whole number of tokens"),
    (["128x128x128", "--model", "llama3-8b", "--tokens", "8"], "give shapes, --model or --shapes-file"),
])
def test_a_bad_request_is_one_clear_line(argv, message, capsys, monkeypatch):
    monkeypatch.setattr(search, "search", lambda *a, **k: pytest.fail("work started"))
    monkeypatch.setattr(cli, "compiler_for", lambda *a, **k: pytest.fail("work started"))
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def write_run(results, constants: dict | None = None, band: dict | None = None, fits: dict | None = None):
    """A run's timing_model.json as the pipeline writes it, with values replaced (None: taken out)."""
    import json

    from tpu_matmul_repro.analysis import timing_model as tm
    from tpu_matmul_repro.analysis.fitted_model import FittedModel

    results.mkdir(exist_ok=True)
    fit = tm.Fit(TRUE, TRUE, 61, 0.1, ())
    FittedModel({"published v5e": (fit, "published")} | (fits or {}),
                intervals.Band({0.8: 0.1366, 0.95: 0.2037}, 61)).write(results / "timing_model.json")
    entry = json.loads((results / "timing_model.json").read_text())
    for part, values in (("constants", constants), ("band", band)):
        mine = entry["fits"]["published v5e"]["constants"] if part == "constants" else entry["band"]
        for key, value in (values or {}).items():
            inner = mine["halfwidth"] if key.startswith("0.") else mine
            if value is None:
                del inner[key]
            else:
                inner[key] = value
    (results / "timing_model.json").write_text(json.dumps(entry))


@pytest.mark.parametrize("constants, band, message", [
    (dict(step_cycles=float("nan")), None,
     "timing_model.json: fits.published v5e.constants.step_cycles: nan is not a finite number"),
    (dict(overlapped_step_cycles=-45613859.0), None,
     "fits.published v5e.constants.overlapped_step_cycles: -45613859.0 is outside [0, 2000]"),
    (dict(float32_factor=9.0), None, "float32_factor: 9.0 is outside [1, 6]"),
    (dict(call_seconds=float("inf")), None, "call_seconds: inf is not a finite number"),
    (dict(float32_factor="two"), None, "float32_factor: 'two' is not a number"),
    (dict(float32_cycles_per_kib=None), None, "fits.published v5e.constants: [") ,
    (dict(zeal=1.0), None, "fits.published v5e.constants: 'zeal' is not one of the model's constants"),
    (None, {"0.8": -0.1}, "timing_model.json: band.halfwidth.0.8: -0.1 is outside [0, inf]"),
    (None, dict(n=2.5), "timing_model.json: band.n: 2.5 is not a whole number of points"),
    (None, {"0.95": "wide"}, "band.halfwidth.0.95: 'wide' is not a number"),
])
def test_a_results_file_outside_the_pipeline_s_bounds_is_refused_at_the_door(
        tmp_path, capsys, monkeypatch, constants, band, message):
    """NaN, out-of-range, unknown or missing constants and a band that no run writes are refused in
    one line naming the file, the key and the value, before any compile."""
    monkeypatch.setattr(search, "search", lambda *a, **k: pytest.fail("work started"))
    monkeypatch.setattr(cli, "compiler_for", lambda *a, **k: pytest.fail("work started"))
    write_run(tmp_path / "results", constants, band)
    assert cli.main(["1024x1024x1024", "--results", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


@pytest.mark.parametrize("damage, message", [
    (lambda r: (r / "timing_model.json").write_bytes(b"\x00\xff\xfe garbage\n\x01,\x02\n\xff"),
     "timing_model.json: not UTF-8 text: byte 0xFF"),
    (lambda r: (r / "timing_model.json").write_text("[1, 2]"),
     "timing_model.json: (top level): [1, 2] is not an object"),
    (lambda r: (r / "timing_model.json").write_text('{"fits": {"published v5e": 3}}'),
     "timing_model.json: fits.published v5e: 3 is not an object"),
])
def test_a_corrupt_results_file_is_one_line_not_a_traceback(tmp_path, capsys, monkeypatch, damage, message):
    monkeypatch.setattr(cli, "compiler_for", lambda *a, **k: pytest.fail("work started"))
    write_run(tmp_path / "results")
    damage(tmp_path / "results")
    assert cli.main(["1024x1024x1024", "--results", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err, err


@pytest.mark.parametrize("damage, why", [
    (lambda r: (r / "timing_model.json").write_text("{}"),
     "has no 'published v5e' fit: that run had too few"),
    (lambda r: (r / "timing_model.json").unlink(), "no "),
    (lambda r: write_run(r, band={"0.95": float("inf")}), "the run's band is infinite at a level: too few"),
])
def test_a_run_without_a_fit_falls_back_to_the_advisor_s_own_and_says_why(tmp_path, monkeypatch, damage, why):
    """A run that fitted nothing is not refused: the advisor's own fit, its header saying why;
    the pipeline's advice job (fallback off) stops in one line instead."""
    import dataclasses

    from tpu_matmul_repro.advise import model as advisor_model

    write_run(tmp_path / "results")
    damage(tmp_path / "results")
    monkeypatch.setenv("TPU_MATMUL_REPRO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(advisor_model, "fitted",
                        lambda config: dataclasses.replace(MODEL, source="fitted here"))
    model = advisor_model.load({}, tmp_path / "results", {"libtpu_version": "y"})
    assert model.source.startswith("fitted here (") and why in model.source, model.source
    with pytest.raises(request.AdviceError, match="the run's timing model is missing: ") as e:
        advisor_model.load({}, tmp_path / "results", {"libtpu_version": "y"}, fallback=False)
    assert why in str(e.value) and "\n" not in str(e.value)


def test_ties_within_the_interval_are_said_to_be_ties():
    ranked = table.ranked(found([(512, 1.00e-3), (256, 1.14e-3), (1024, 1.16e-3), (2048, None, "vmem_oom")]),
                          MODEL, "v5e").set_index("bm")
    assert ranked["rank"].dropna().to_dict() == {512: 1, 256: 2, 1024: 3}
    assert pd.isna(ranked.loc[2048, "rank"])
    assert ranked.loc[256, "tie"].startswith("tie with #1")  # x1.14 < x1.15
    assert ranked.loc[1024, "tie"] == ""  # x1.16 > x1.15
    assert ranked.loc[512, "tie"] == ""
    assert ranked.loc[512, "model_device_ms_lo80"] < 1.0 < ranked.loc[512, "model_device_ms_hi80"]
    assert "out of VMEM" in ranked.loc[2048, "note"]


def test_candidates_follow_the_mxu_width_and_divide_the_shape():
    v6e = candidates.candidates("v5", "bfloat16", (8192, 4096, 14336), "v6e")
    assert {x.case.bm for x in v6e} == {256, 512, 1024, 2048, 4096, 8192}
    assert all(14336 % x.case.bn == 0 and x.case.bn % 256 == 0 and not x.padded for x in v6e)
    assert candidates.edges(384, 256) == [128, 384]  # no MXU-wide block divides it: lane-wide ones
    assert candidates.edges(128, 256) == [128]


COMPILER = dict(toolchain="current", static_profile=False)  # as the advisor compiles (config.yaml)
SETTINGS = dict(timeout_s=300, profile_max_steps=16, skip_dominated=True)


@pytest.mark.compiler
def test_a_small_non_square_problem_is_ranked_end_to_end():
    found = search.search((1024, 512, 2048), "bfloat16", "v5e", "v5", MODEL, COMPILER, SETTINGS)
    ranked = table.ranked(found, MODEL, "v5e")
    ok = ranked[(ranked.kernel == "v5") & (ranked.status == "ok")]
    assert len(ok) and list(ok["rank"]) == list(range(1, len(ok) + 1))
    assert (ok.model_device_ms.diff().dropna() >= 0).all()
    assert (ok.model_device_ms_lo80 < ok.model_device_ms).all()
    assert (ok.model_device_ms < ok.model_device_ms_hi80).all()
    assert (ok.vmem_needed_mib <= 16).all() and (ok.physical_vmem_mib == 128).all()
    xla = ranked[ranked.kernel == "xla"]
    assert len(xla) == 1 and xla.model_device_ms.notna().all()
    assert set(ranked.status) <= {"ok", "vmem_oom", search.PRUNED}
    text = table.text(ranked, ["header"])
    assert "XLA jnp.matmul" in text and "(" in text


@pytest.mark.compiler
@pytest.mark.slow
def test_a_raised_limit_ranks_the_blocks_that_need_it_and_each_row_says_what_it_needs():
    """--vmem-limit (37.3): blocks out of VMEM at the default are compiled again at the limit asked,
    ranked if they fit there, and every row says the VMEM it needs, the limits it was compiled at and
    the chip's physical VMEM."""
    shape = (1024, 2048, 2048)
    default = table.ranked(search.search(shape, "bfloat16", "v5e", "v5", MODEL, COMPILER, SETTINGS), MODEL,
                           "v5e")
    raised = table.ranked(search.search(shape, "bfloat16", "v5e", "v5", MODEL, COMPILER, SETTINGS,
                                        vmem_limit_bytes=48 << 20), MODEL, "v5e")
    assert (raised.vmem_limit_mib == 48).all() and (default.vmem_limit_mib == 16).all()
    fits_raised = raised[(raised.status == "ok") & (raised.vmem_needed_mib > 16)]
    assert len(fits_raised), "no block needed more than the default limit"
    for r in fits_raised.itertuples():  # compiled at both limits, and it says so
        assert r.limits_tried.startswith("16 MiB: out of VMEM, ")  # asked, or by its blocks alone
        assert r.limits_tried.endswith(f"48 MiB: ok, uses {r.vmem_needed_mib:.1f} MiB")
        assert r.vmem_needed_mib <= 48 < r.physical_vmem_mib
    assert (default[(default.status == "ok") & (default.kernel != "xla")].vmem_needed_mib <= 16).all()
    best = raised[raised["rank"] == 1].iloc[0]
    assert best.model_device_ms <= default[default["rank"] == 1].iloc[0].model_device_ms


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
    from tpu_matmul_repro.analysis import timing_model as tm

    results = tmp_path / "results"
    results.mkdir()
    assert advisor_model.from_results(results)[0] is None  # nothing there: not a model
    measured = tm.Fit(tm.Constants(50.0, 1e-4, 2.0, 20.0), TRUE, 9, 0.1, ())
    write_run(results, fits={"measured v5e run1": (measured, "measured")})
    found, _ = advisor_model.from_results(results)
    assert found.constants == TRUE  # the published fit's, never a measured one
    assert found.band.halfwidth == {0.8: 0.1366, 0.95: 0.2037} and found.band.n == 61
    monkeypatch.setenv("TPU_MATMUL_REPRO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(advisor_model, "fitted", lambda config: dataclasses.replace(found, source="fitted"))
    versions = {"jax_version": "x", "libtpu_version": "y"}
    first = advisor_model.load({}, tmp_path / "none", versions)
    assert first.source.startswith("fitted (no ")  # and why: the run's files are not there
    monkeypatch.setattr(advisor_model, "fitted", lambda config: pytest.fail("fitted again"))
    again = advisor_model.load({}, tmp_path / "none", versions)
    assert again.constants == TRUE and "cache" in again.source
    assert advisor_model.cached({**versions, "libtpu_version": "z"})[0] is None  # another compiler: refit


def test_candidates_reach_past_2048_and_pad_what_no_edge_divides():
    """Edges up to the whole dimension (37.2) and zero-padding where no edge divides (37.1): an edge
    of 4096 and more where the dimension allows it, and the padded problem each candidate runs on."""
    assert candidates.edges(8192, 128) == [128, 256, 512, 1024, 2048, 4096, 8192]
    assert candidates.edges(14336, 256) == [256, 512, 1024, 2048, 14336]  # 4096 would pad it by 14 %
    assert candidates.edges(8205, 128) == [128, 256, 512, 1024]  # 2048 would pad it by 25 %
    assert 131072 in candidates.edges(128256, 128)  # pads the vocabulary by 2.2 %
    found = {(x.case.bm, x.case.bk, x.case.bn): x for x in candidates.candidates("v5", "bfloat16",
                                                                                (8205, 2949, 5921), "v5e")}
    pad = found[(512, 1024, 2048)].case
    assert (pad.m, pad.k, pad.n) == (8704, 3072, 6144) and found[(512, 1024, 2048)].padded
    assert all(x.case.m % x.case.bm == 0 and x.case.k % x.case.bk == 0 and x.case.n % x.case.bn == 0
               for x in found.values())


def test_a_vmem_limit_is_read_in_whole_mib_and_checked_against_the_chip():
    assert request.parse_vmem_limit("32MiB") == 32 << 20 == request.parse_vmem_limit("32M")
    assert request.parse_vmem_limit("33554432") == 32 << 20
    with pytest.raises(request.AdviceError, match="not a whole number of MiB"):
        request.checked(["1024x1024x1024"], "bfloat16", ["v6e"], "v5", request.parse_vmem_limit("33.5MiB"))
    request.checked(["1024x1024x1024"], "bfloat16", ["v6e"], "v5", 96 << 20)  # v6e: 32 default, 128 physical
    with pytest.raises(request.AdviceError, match="more than 7x's physical VMEM of 64 MiB"):
        request.checked(["1024x1024x1024"], "bfloat16", ["7x"], "v5", 96 << 20)


def found(rows, xla_seconds=None, limit=16 << 20):
    """A search's result from made-up rows (the columns the table reads), times in seconds."""
    from tpu_matmul_repro.advise.search import SearchResult

    def one(bm, seconds, status="ok", bound=None, kernel="v5"):
        work = 2 * 4096**3
        r = dict(target="v5e", kernel=kernel, dtype="bfloat16", m=4096, k=4096, n=4096, bm=bm, bk=512, bn=512,
                 status=status, lower_bound_seconds=bound, vmem_bytes=4 << 20, vmem_limit_bytes=16 << 20,
                 oom_limit_bytes=None,
                 est_cycles=1, tflops=None, error="", vmem_method="compiled", model_fit="published v5e",
                 xla_estimate_method="", padded_shape="", limits_tried="16 MiB: ok", model_interval="a band")
        for time, extra in (("device", 0.0), ("post", 1e-4)):
            t = None if seconds is None else seconds + extra
            r[f"model_{time}_seconds"] = t
            r[f"model_{time}_tflops"] = None if t is None else work / t / 1e12
            for level, q in BAND.halfwidth.items():
                s = round(100 * level)
                r[f"model_{time}_seconds_lo{s}"] = None if t is None else t * math.exp(-q)
                r[f"model_{time}_seconds_hi{s}"] = None if t is None else t * math.exp(q)
                r[f"model_{time}_tflops_lo{s}"] = None if t is None else work / t / 1e12 * math.exp(-q)
                r[f"model_{time}_tflops_hi{s}"] = None if t is None else work / t / 1e12 * math.exp(q)
        return r

    pallas = pd.DataFrame([one(*r) for r in rows])
    xla = pd.DataFrame([one(None, xla_seconds, kernel="xla")] if xla_seconds else [], columns=pallas.columns)
    return SearchResult(pallas, xla.assign(bm=None, bk=None, bn=None) if len(xla) else xla, limit, {})


@pytest.mark.parametrize("rows, xla, says", [
    ([(512, 1.00e-3), (256, 1.20e-3)], 1.5e-3,
     "Use (512,512,512): modelled 20 % faster than the next, (256,512,512), beyond the 80 % band (x/1.15); "
     "XLA is modelled 50 % slower, beyond the band"),
    ([(512, 1.00e-3), (256, 1.10e-3), (1024, 1.14e-3)], 1.3e-3,
     "Any of these 3 blocks, which the model cannot tell apart (each within the 80 % band (x/1.15) of the "
     "best, (512,512,512) at 1.000 ms): (512,512,512), (256,512,512), (1024,512,512); XLA is modelled 30 % "
     "slower, beyond the band"),
    ([(512, 1.00e-3), (256, 1.20e-3)], 1.1e-3,
     "(512,512,512) or XLA, which the model cannot tell apart (the block at 1.000 ms): XLA is modelled 10 % "
     "slower, inside the band"),
    ([(512, 1.05e-3), (256, 1.20e-3)], 1.0e-3,
     "XLA or this block: XLA is modelled 5 % faster than the best blocks (512,512,512), inside the 80 % band "
     "(x/1.15)"),
    ([(512, 1.00e-3), (256, 1.30e-3), (1024, None, "pruned", 1.2e-3)], 1.5e-3,
     "Use (512,512,512): modelled at least 20 % faster than any other block (by the bound of the 1 not "
     "compiled), beyond the 80 % band (x/1.15)"),
    ([(512, 1.00e-3), (1024, None, "vmem_oom")], 1.5e-3,
     "Use (512,512,512): the only block that fits; XLA is modelled 50 % slower, beyond the band"),
    ([(512, 1.02e-3), (256, 1.10e-3), (1024, 1.30e-3)], 1.0e-3,
     "XLA or any of these 2 blocks: XLA is modelled 2 % faster than the best blocks (512,512,512), inside "
     "the 80 % band (x/1.15): (512,512,512), (256,512,512)"),
    ([(512, 1.30e-3)], 1.0e-3,
     "Use XLA: XLA is modelled 30 % faster than the best blocks (512,512,512), beyond the 80 % band"),
    ([(512, None, "vmem_oom")], 1.0e-3, "Use XLA: no candidate block fits the 16 MiB scoped-VMEM limit"),
])
def test_the_recommendation_says_what_the_numbers_say(rows, xla, says):
    """The line on top (37.4) from the modelled times and the band: the block shape, XLA or the set the
    model cannot tell apart, and why; its percentages are the table's own ratios."""
    ranked = table.ranked(found(rows, xla), MODEL, "v5e")
    line = ranked.recommendation.iloc[0]
    assert line.startswith(says), line
    assert (ranked.recommendation == line).all()
    text = table.text(ranked, ["first line", "second line"])
    assert f"Why: {line}." in text.splitlines()


@pytest.mark.parametrize("pruned, says", [
    (1, "1 more candidate not compiled: even without compiler cycles the model gives it at least 2.0"),
    (2, "2 more candidates not compiled: even without compiler cycles the model gives each at least 2.0"),
])
def test_the_lines_under_the_table_count_in_words_that_agree(pruned, says):
    rows = [(512, 1.0e-3)] + [(256 >> i, None, search.PRUNED, 2.0e-3 + i * 1e-3) for i in range(pruned)]
    text = table.text(table.ranked(found(rows), MODEL, "v5e"), ["header"])
    (line,) = [x for x in text.splitlines() if "more candidate" in x]
    assert line.startswith(says), line
    assert line.endswith("(--csv lists it)" if pruned == 1 else "(--csv lists them)")


def test_a_shapes_file_is_checked_in_one_line_naming_the_entry(tmp_path):
    from tpu_matmul_repro.advise import whole_models as models

    bad = tmp_path / "layers.yaml"
    for body, message in [
        ("projections: [{name: up, k: 4096, n: 0, count: 1}]", "projections[0].n: 0 is not a whole number"),
        ("projections: [{name: up, k: 4096, n: 128, count: 1, shape: 3}]", "unknown key 'shape'"),
        ("projections: [{name: up, k: 4096, n: 128, count: 1}]", "has no m: give --tokens"),
        ("projections: [{k: 4096, n: 128, count: 1, tokens_share: 1.5}]",
         "tokens_share: 1.5 is not a number"),
        ("projections: []", "a non-empty list 'projections'"),
        ("projections: [{name: up, k: 4096, count: 1}]", "projections[0]: no 'n' (each projection gives"),
        ("projections: [{k: 1, n: 1, count: 1}\n", "layers.yaml"),
    ]:
        bad.write_text(body)
        with pytest.raises(request.AdviceError, match="--shapes-file") as e:
            models.from_file(bad, None)
        assert message in str(e.value) and "\n" not in str(e.value), str(e.value)
    bad.write_text("projections: [{name: expert, k: 4096, n: 14336, tokens_share: 0.25, count: 256},"
                   " {name: head, m: 16, k: 4096, n: 128256, count: 1}]")
    layout = models.from_file(bad, 8192)
    assert [p.shape for p in layout.projections] == [(2048, 4096, 14336), (16, 4096, 128256)]


def test_every_preset_is_a_layout_of_the_advisor_s_shapes():
    from tpu_matmul_repro.advise import whole_models as models

    for name in cli.presets():
        layout = models.preset(name, 8192)
        assert layout.projections and all(p.count >= 1 for p in layout.projections)
        for shape in layout.shapes:
            request.checked([shape], "bfloat16", ["v5e", "v6e"], "v5")  # each fits both chips' HBM
    head = [p for p in models.preset("llama3-8b", 8192).projections if p.name == "LM head"]
    assert head[0].shape == (8192, 4096, 128256) and head[0].count == 1


def test_model_totals_add_up_the_projections_it_uses():
    from tpu_matmul_repro.advise import whole_models as models

    layout = models.Layout("m", "m", 4096, (models.Projection("a", (4096, 4096, 4096), 3),
                                            models.Projection("b", (4096, 4096, 4096), 1)))
    ranked = table.ranked(found([(512, 1.0e-3), (256, 1.1e-3)], 0.9e-3), MODEL, "v5e")
    summary = models.totals(layout, {(4096, 4096, 4096): ranked})
    assert list(summary.use) == ["XLA +1 tied"] * 2  # XLA is modelled faster; (512,512,512) within x1.15
    assert summary.total_ms.sum() == pytest.approx(4 * 0.9)
    assert summary.total_hi80.sum() == pytest.approx(4 * 0.9 * 1.15, rel=1e-3)
    words = models.text(layout, "v5e", "TPU v5 lite", "bfloat16", "v5", summary)
    total = (f"{summary.total_ms.sum():.1f} ms (device time; {summary.total_lo80.sum():.1f} to "
             f"{summary.total_hi80.sum():.1f} ms adding up each projection's 80 % band")
    assert total in words


def empty_fit_config() -> dict:
    """The default config with its experiments replaced by one given shapes and no sizes: its square
    sizes are dropped, so none of the post's configurations is compiled and the model has no point."""
    from tpu_matmul_repro.experiments.plan.config import load_yaml

    config = load_yaml(ROOT / "config" / "config.yaml")
    v5 = dict(kernel="v5", dtypes=["bfloat16"], blocks=[[512, 512, 512]], shapes=[[8192, 4096, 14336]])
    config["compile_study"]["experiments"] = {"v5": v5}
    return config


def test_the_planned_fit_is_counted_before_any_job():
    """37.8 at plan time: the default config's fit has the post's 61 points; one that compiles none of
    them, or not for v5e, is refused in one line saying what is missing."""
    from tpu_matmul_repro.advise.pipeline import missing_fit, planned_points
    from tpu_matmul_repro.experiments.plan.config import checked, load_yaml
    from tpu_matmul_repro.experiments.plan.plan import make_plan

    published = ROOT / "data" / "published_v5e.csv"
    default = make_plan(checked(load_yaml(ROOT / "config" / "config.yaml")))
    assert len(planned_points(default, published)) == 61 and missing_fit(default, published) == ""
    for config in (empty_fit_config(), {**load_yaml(ROOT / "config" / "config.yaml"), "targets": ["v6e"]}):
        why = missing_fit(make_plan(checked(config)), published)
        assert why.startswith("advice.shapes needs this run's timing model") and "it would have 0" in why
        assert "\n" not in why


@pytest.mark.slow
def test_an_empty_fit_config_with_advice_stops_before_any_job(tmp_path):
    """The config of issue 37's 'empty model, then a traceback': refused in one line before any job,
    nothing written (no empty timing_model.csv)."""
    import shutil
    import subprocess
    import sys

    import yaml

    shutil.copytree(ROOT / "config", tmp_path / "config")
    (tmp_path / "config" / "empty.yaml").write_text(yaml.safe_dump(empty_fit_config()))
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--cores", "1",
               "--configfile", "config/empty.yaml", "--replace-workflow-config"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = result.stdout + result.stderr
    assert result.returncode != 0
    lines = [line for line in out.splitlines() if "advice.shapes needs this run's timing model" in line]
    from tpu_matmul_repro.analysis import timing_model as tm

    need = len(tm.PARAMS) + 2
    assert len(lines) == 1 and f"it would have 0 (a fit needs {need})" in lines[0], out[-2000:]
    assert not (tmp_path / "results").exists() and "Traceback" not in out


@pytest.mark.slow
def test_regret_is_zero_where_the_model_ranks_as_the_post_and_counts_what_it_loses():
    """37.9: the pick of a fit that left its figure out against the post's best. On a table whose
    published times are the model's own, every pick is the best; make another block the post's best
    at one size and that size's regret is exactly the pick's published time over the new best's."""
    from test_timing_model import synthetic_table

    from tpu_matmul_repro.advise import regret
    from tpu_matmul_repro.analysis.fitted_model import fit_model

    df = synthetic_table()
    exact = regret.regret(df, fit_model(df))
    assert set(exact.figure) == {"v4", "v5"} and (exact.model_regret.abs() < 1e-9).all()
    assert exact.post_best_in_tie_set.all()
    published = (df.source == "published") & (df.experiment == "v5") & (df.m == 4096)
    pick = exact[(exact.figure == "v5") & (exact["size"] == 4096)].model_pick.iloc[0]
    other = df[published & (df.bm == 256)].index[0]
    bm, bk, bn = (int(x) for x in pick.strip("()").split(","))
    chosen = df[published & (df.bm == bm) & (df.bk == bk) & (df.bn == bn)].index[0]
    df.loc[other, "tflops"] = df.loc[chosen, "tflops"] * 1.25  # the post's best is now (256,256,256)
    moved = regret.regret(df, fit_model(df)).set_index(["figure", "size"])
    assert moved.loc[("v5", 4096), "post_best"] == "(256,256,256)"
    assert moved.loc[("v5", 4096), "model_regret"] == pytest.approx(0.25)
    assert (moved.drop(index=("v5", 4096)).model_regret.abs() < 1e-9).all()  # the other folds unmoved


def same_configuration(rows: pd.DataFrame, r) -> pd.DataFrame:
    """The timed rows of `rows` of the kernel, shape and blocks of row `r` (a table's itertuples row)."""
    blocks = rows.bm.isna() if pd.isna(r.bm) else (rows.bm == r.bm) & (rows.bk == r.bk) & (rows.bn == r.bn)
    return rows[(rows.kernel == r.kernel) & (rows.m == r.m) & (rows.k == r.k) & (rows.n == r.n) & blocks
                & rows.model_device_ms.notna()]


POST_BLOCKS = [[128, 128, 128], [256, 256, 256], [512, 512, 512], [512, 1024, 1024], [1024, 1024, 1024]]
ONE_NUMBER = {  # the post's experiments at 1024 and 2048 (29 published points: a fit and its band), and
    # a layer of a non-square shape whose blocks the advisor also ranks
    "correctness": {"tolerance": {"float32": 1e-5, "bfloat16": 1e-2, "int8": 0}, "shapes": [[256, 256, 256]],
                    "kernels": {"xla": {"dtypes": ["bfloat16"]}}},
    "targets": ["v5e"],
    "studies": [],
    "measure": {"device": "off"},
    "compile_study": {
        "sizes": [1024, 2048], "baseline_dtypes": ["float32", "bfloat16"],
        "experiments": {
            "v1": {"kernel": "v1", "dtypes": ["float32"]},
            "v2": {"kernel": "v2", "dtypes": ["float32"], "splits": [4]},
            "v3": {"kernel": "v3", "dtypes": ["float32"], "blocks": [[128, 128, 128]]},
            "v4": {"kernel": "v3", "dtypes": ["float32"], "blocks": POST_BLOCKS},
            "v5": {"kernel": "v5", "dtypes": ["bfloat16"], "blocks": POST_BLOCKS},
            "layer": {"kernel": "v5", "dtypes": ["bfloat16"], "blocks": [[1024, 512, 256], [512, 512, 512]],
                      "shapes": [[1024, 512, 2048], [2048, 1024, 4096]]}}},
    "advice": {"shapes": [[1024, 512, 2048], [2048, 1024, 4096]], "targets": ["v5e"]},
}


@pytest.mark.slow
@pytest.mark.compiler
def test_one_configuration_gets_one_number_in_the_cli_the_advice_and_the_table(tmp_path, capsys, monkeypatch):
    """37.7: two non-square layers of one aspect (the larger's XLA estimate compared with the smaller's
    by the envelope) modelled alike by the compile study (results/matmul.parquet), the pipeline's
    advice job (results/advice/) and the CLI on that run's results/, intervals included; the advice
    job's log says how many of its compiles came from the compile cache (38.2), and ranks with the
    run's own model. (The table models v5e rows of the post's own figures by the refit without their
    figure; the advisor, asked about a layer, by the fit on every point: the layer is neither.)"""
    import json
    import re
    import shutil
    import subprocess
    import sys

    import yaml

    monkeypatch.setenv("TPU_MATMUL_REPRO_CACHE", str(runs.warm_compiles_cold_outputs(tmp_path / "cache")))
    shutil.copytree(ROOT / "config", tmp_path / "config")
    (tmp_path / "config" / "one.yaml").write_text(yaml.safe_dump(ONE_NUMBER))
    shapes = ["1024x512x2048", "2048x1024x4096"]
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--cores", "2",
               "--configfile", "config/one.yaml", "--replace-workflow-config", "results/matmul.parquet",
               *(f"results/advice/{s}.csv" for s in shapes)]
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    table = pd.read_parquet(tmp_path / "results" / "matmul.parquet")
    table = table[(table.source == "estimate") & table.model_device_seconds.notna()]
    assert cli.main([*shapes, "--results", str(tmp_path / "results"), "--config",
                     str(tmp_path / "config" / "one.yaml"), "--json"]) == 0
    from_cli = pd.DataFrame(json.loads(capsys.readouterr().out))
    compared = 0
    for shape in shapes:
        m, k, n = (int(x) for x in shape.split("x"))
        advice = pd.read_csv(tmp_path / "results" / "advice" / f"{shape}.csv")
        log = (tmp_path / "logs" / "advice" / f"{shape}.log").read_text()
        counted = re.search(r"advice \S+ on v5e: (\d+) of (\d+) compiles from the compile cache", log)
        assert counted and int(counted[2]) > 0, log[-2000:]
        assert "pipeline run" in advice.model_source.iloc[0]  # the run's own model, not a fit of its own
        mine = table[(table.m == m) & (table.k == k) & (table.n == n)]
        assert set(mine.model_fit) == {"published v5e"}  # the layer's rows: the fit on every point
        for r in mine.drop_duplicates(["kernel", "bm", "bk", "bn"]).itertuples():
            in_advice, in_cli = same_configuration(advice, r), same_configuration(from_cli, r)
            if in_advice.empty:  # a block the advisor pruned: no number there to compare
                assert in_cli.empty
                continue
            # the constants of the run's timing_model.json, which the advisor reads
            assert in_advice.model_device_ms.iloc[0] == pytest.approx(r.model_device_seconds * 1e3, rel=1e-5)
            assert in_cli.model_device_ms.iloc[0] == pytest.approx(r.model_device_seconds * 1e3, rel=1e-5)
            assert in_cli.model_device_ms_hi80.iloc[0] == pytest.approx(r.model_device_seconds_hi80 * 1e3,
                                                                        rel=1e-5)
            assert in_cli.model_device_ms.iloc[0] == pytest.approx(in_advice.model_device_ms.iloc[0],
                                                                   rel=1e-5)
            compared += 1
    assert compared >= 3  # XLA at both shapes and at least one block


def test_the_advisor_reads_the_run_s_fits_as_the_run_made_them(tmp_path):
    """The advisor's model from a run's timing_model.json: the published fit's constants, its refits
    without each figure and the band, size bands without points included (the widest band's)."""
    from test_timing_model import synthetic_table

    from tpu_matmul_repro.advise import model as advisor_model
    from tpu_matmul_repro.analysis import validation
    from tpu_matmul_repro.analysis.fitted_model import fit_model

    df = synthetic_table()
    made = fit_model(df[df.m < 4096])  # no point in the two larger size bands
    made.write(tmp_path / "timing_model.json")
    read, why = advisor_model.from_results(tmp_path)
    assert why == "" and read.constants == made.published.constants
    assert read.refits == {figure: fit.constants for figure, fit in made.refits().items()}
    assert set(read.band.by_size) == set(made.band.by_size) == set(validation.SIZE_BANDS)
    assert read.band == made.band


def test_the_vmem_floor_doubles_the_blocks_only_where_libtpu_is_known_to():
    """Blocks out of VMEM before any compile: one buffer of each block always; two (and v5's
    accumulator once) where every grid axis has more than one step and libtpu is one seen to
    double-buffer them; a single-step axis can leave its blocks one buffer."""
    from tpu_matmul_repro.experiments.core.cases import Case

    multi = Case("v5", "bfloat16", 8192, 4096, 14336, 2048, 512, 2048)  # grid 4 x 8 x 7
    acc, blocks = 2048 * 2048 * 4, (2048 * 512 + 512 * 2048 + 2048 * 2048) * 2
    assert search.vmem_floor(multi, "0.0.42.1") == (2 * blocks + acc, search.DOUBLE_BUFFER_BOUND)
    assert search.vmem_floor(multi, "0.0.52")[1] == search.DOUBLE_BUFFER_BOUND
    assert search.vmem_floor(multi, "0.0.5") == (blocks + acc, "block_bound")  # gave large blocks one buffer
    one_k_step = Case("v5", "bfloat16", 8192, 4096, 14336, 1024, 4096, 512)
    assert search.vmem_floor(one_k_step, "0.0.42.1")[1] == "block_bound"


@pytest.mark.compiler
def test_the_compiler_asks_two_buffers_of_each_block_where_the_floor_says_so():
    """The double-buffer floor checked against today's compiler (the primary toolchain's libtpu must be
    one DOUBLE_BUFFERED_LIBTPU names): grids with more than one step along every axis, v5 and v3, three
    dtypes, each asks at least the floor."""
    from tpu_matmul_repro.experiments.compile_study.tpu_compile import Compiler
    from tpu_matmul_repro.experiments.core.cases import Case
    from tpu_matmul_repro.experiments.core.provenance import provenance

    libtpu = provenance()["libtpu_version"]
    assert libtpu in search.DOUBLE_BUFFERED_LIBTPU
    cases = [Case("v5", "bfloat16", 1024, 1024, 1024, 512, 512, 512),
             Case("v5", "float32", 512, 2048, 1024, 256, 1024, 512),
             Case("v5", "int8", 1024, 2048, 2048, 512, 1024, 1024),
             Case("v3", "float32", 1024, 2048, 2048, 512, 1024, 1024)]
    with Compiler("v5e", cache=None) as compiler:
        for case in cases:
            floor, method = search.vmem_floor(case, libtpu)
            result = compiler.compile(case, 128 << 20)  # the physical VMEM: each compiles and says its use
            assert method == search.DOUBLE_BUFFER_BOUND and result["vmem_bytes"] >= floor, (case, result)


def _caveat_numbers(line: str) -> tuple[int, int, float, float]:
    import re

    found = re.search(r"Cycles of (\d+) candidates .* profiles of (\d+) blocks .* off by ([-+][\d.]+) % to "
                      r"([-+][\d.]+) %", line)
    assert found, line
    return int(found[1]), int(found[2]), float(found[3]), float(found[4])
