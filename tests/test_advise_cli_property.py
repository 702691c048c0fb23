"""The advisor's command line over its whole input space: shapes from 1 to beyond the chip's HBM,
aligned or not, every dtype and target (and wrong ones), scoped-VMEM limits from nothing to beyond the
physical VMEM, --model, --shapes-file, every output. The compiler is a stand-in (advise_fakes.py) that
keeps the real VMEM rules, so each call takes a fraction of a second. Every call ends in exit 0 with a
complete table (a row per candidate and XLA's, for every shape and target asked) whose numbers are
finite, positive and no faster than the chip's peak FLOP/s or its HBM bandwidth, or in exit 2 with one
line naming the input; never a traceback. The real compiler on a few real queries: the compiler tests
at the end."""
import contextlib
import io
import json
import math
import os
import re
from pathlib import Path

import pandas as pd
import pytest
from advise_fakes import StandInCompiler
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_advise import write_run

from tpu_matmul_repro.advise import cli, search
from tpu_matmul_repro.advise import workers as compile_workers
from tpu_matmul_repro.advise.candidates import candidates
from tpu_matmul_repro.advise.ranking import COLUMNS, INTERVALS
from tpu_matmul_repro.advise.request import parse_shape
from tpu_matmul_repro.experiments.core.chips import POST_CHIP, chip
from tpu_matmul_repro.experiments.core.traffic import hbm_bytes
from tpu_matmul_repro.experiments.core.units import flops

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = 200 if os.environ.get("HYPOTHESIS_PROFILE") == "ci" else 10
# 7x is served by another toolchain (libtpu 0.0.52, whose VMEM bound doubles the blocks)
VERSIONS = {"7x": dict(jax="0.10.2", jaxlib="0.10.2", libtpu="0.0.52")}
PROGRESS = re.compile(r"advise: [0-9].* s: ")  # progress.Reporter's lines
SLACK = 1 + 1e-9

dims = st.one_of(st.sampled_from([1, 7, 128, 256, 384, 1000, 1024, 4096, 8192, 14336, 28672, 128256]),
                 st.integers(1, 20_000), st.integers(1, 3_000_000))
BAD_SHAPES = ["0x128x128", "-1x128x128", "1.5x2x2", "128x128", "axbxc", "128x128x128x2", "²x1x1"]
shape_text = st.tuples(dims, dims, dims).map(lambda s: "x".join(map(str, s)))
dtypes = st.sampled_from(["bfloat16", "float32", "int8"])
targets = st.sampled_from(["v5e", "v6e", "v5p", "7x"])
limits = st.sampled_from(["16MiB", "32MiB", "48M", "64MiB", "100MiB", "128MiB"])
# each a wrong value of one argument, drawn for about one request in three
WRONG = [("--dtype", "float16"), ("--dtype", "BF16"), ("--target", "v4"), ("--target", "v9"),
         ("--vmem-limit", "0"), ("--vmem-limit", "1MiB"), ("--vmem-limit", "129MiB"),
         ("--vmem-limit", "1GiB"), ("--vmem-limit", "33554433"), ("--vmem-limit", "lots"), ("--workers", "0"),
         ("--time-budget", "0"), ("--tokens", "0"), ("--model", "gpt-9")]
outputs = st.sampled_from([[], ["--csv"], ["--json"]])


@st.composite
def requests(draw):
    """(argv, the YAML of a shapes file or None): shapes, a preset model or a shapes file, with or
    without each option; about one in three with one wrong value somewhere."""
    kind = draw(st.sampled_from(["shapes"] * 8 + ["file"] * 3 + ["model"]))
    argv, yaml_text = [], None
    if kind == "shapes":
        argv += draw(st.lists(shape_text, min_size=1, max_size=2))
        shapes = len(argv)
    elif kind == "model":
        argv += ["--model", "llama3-8b", "--tokens", str(draw(st.sampled_from([1, 16, 300, 8192])))]
        shapes = 6
    else:
        rows = draw(st.lists(st.tuples(st.one_of(st.none(), dims), dims, dims, st.integers(1, 40)),
                             min_size=1, max_size=2))
        shapes = len(rows)
        yaml_text = "projections:\n" + "".join(
            f"  - {{name: p{i}, {'' if m is None else f'm: {m}, '}k: {k}, n: {n}, count: {c}}}\n"
            for i, (m, k, n, c) in enumerate(rows))
        if any(m is None for m, *_ in rows):
            argv += ["--tokens", str(draw(st.sampled_from([1, 64, 4096])))]
    if draw(st.booleans()):
        argv += ["--dtype", draw(dtypes)]
    # two searches at most (about a second of modelling each), bar the model's six shapes
    for target in draw(st.lists(targets, max_size=2 if shapes == 1 else 1)):
        argv += ["--target", target]
    if draw(st.booleans()):
        argv += ["--vmem-limit", draw(limits)]
    argv += draw(outputs) + ["--workers", draw(st.sampled_from(["1", "2"]))]
    if draw(st.integers(0, 2)) == 2:
        wrong = draw(st.sampled_from(WRONG + BAD_SHAPES))
        if isinstance(wrong, tuple):
            argv += list(wrong)
        elif kind == "shapes":
            argv.insert(0, wrong)
    return argv, yaml_text


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    """A folder with a run's results/ (its model: the default --results of a call made there)."""
    folder = tmp_path_factory.mktemp("user")
    write_run(folder / "results")
    return folder


@contextlib.contextmanager
def stand_in(folder: Path, faults: float = 0.0):
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        mp.setenv("TPU_MATMUL_REPRO_CACHE", "off")
        mp.setattr(compile_workers, "Compiler", StandInCompiler)
        mp.setattr(StandInCompiler, "faults", faults)
        mp.setattr(cli, "compiler_for", lambda target, config: dict(
            toolchain="current", static_profile=True, versions=VERSIONS.get(target)))
        yield


def call(argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(request=requests(), faults=st.sampled_from([0.0, 0.0, 0.2]))
def test_every_request_is_answered_whole_or_refused_in_one_line(run_folder, request, faults):
    argv, yaml_text = request
    if yaml_text is not None:
        (run_folder / "shapes.yaml").write_text(yaml_text)
        argv = ["--shapes-file", "shapes.yaml", *argv]
    with stand_in(run_folder, faults):
        code, out, err = call(argv)
    event(f"exit {code}" + (f": {err.strip().splitlines()[-1][:60]}" if code == 2 else ""))
    assert "Traceback" not in out + err
    if code == 2:
        lines = err.strip().splitlines()
        assert lines and all(PROGRESS.match(x) for x in lines[:-1]), err
        assert lines[-1].startswith("advise: ") and names_the_input(lines[-1], argv), (argv, err)
        return
    assert code == 0, (argv, code, err)
    asked = answered_request(argv, run_folder)
    if "--csv" in argv:
        check_table(pd.read_csv(io.StringIO(out), keep_default_na=True), asked)
    elif "--json" in argv:
        check_table(pd.DataFrame(json.loads(out)), asked)
    else:
        check_text(out, asked, layout="--model" in argv or "--shapes-file" in argv)


def names_the_input(line: str, argv) -> bool:
    """The refusal names what it refuses: an argument as given, or a shape (a model's, a file's)."""
    return (any(a in line for a in argv if len(a) > 1 and not a.startswith("--"))
            or any(a in line for a in argv if a.startswith("--") and a not in ("--csv", "--json"))
            or bool(re.search(r"shape [0-9]+x[0-9]+x[0-9]+", line)))


def answered_request(argv, folder: Path):
    """The checked request an answered argv made (the advisor's own parsing: its shapes, dtype and
    targets), to count the rows its table must have."""
    args = cli.arguments(argv)
    with contextlib.chdir(folder):
        layout = cli.layout_of(args)
    shapes = layout.shapes if layout else list(dict.fromkeys(parse_shape(s) for s in args.shapes))
    targets = list(dict.fromkeys(args.targets or [POST_CHIP]))
    return shapes, args.dtype, targets


def check_table(df: pd.DataFrame, asked) -> None:
    shapes, dtype, targets = asked
    assert list(df.columns) == COLUMNS
    for target in targets:
        c = chip(target)
        for m, k, n in shapes:
            mine = df[(df.target == target) & (df.m == m) & (df.k == k) & (df.n == n)]
            expected = len(candidates("v5", dtype, (m, k, n), target)) + 1
            assert len(mine) == expected, (target, (m, k, n), len(mine), expected)
            assert (mine.kernel == "xla").sum() == 1
            ranked = mine[mine["rank"].notna()].sort_values("rank")
            assert list(ranked["rank"].astype(int)) == list(range(1, len(ranked) + 1))
            times = ranked.model_device_ms.to_numpy()  # fastest first; equal to 9 digits: the tie-break
            assert (times[1:] >= times[:-1] * (1 - 1e-9)).all()
            assert (ranked.status == "ok").all() and (ranked.vmem_needed_mib <= ranked.vmem_limit_mib).all()
            timed = mine[mine.model_device_ms.notna()]
            numbers = timed[["model_device_ms", "model_post_ms", "model_device_tflops", *INTERVALS,
                             "peak_flops_pct", "hbm_bandwidth_pct"]].astype(float)
            assert numbers.map(math.isfinite).all().all() and (numbers > 0).all().all(), timed
            t = timed.model_device_ms / 1e3
            assert (timed.model_device_ms_lo80 <= timed.model_device_ms * SLACK).all()
            assert (timed.model_device_ms <= timed.model_device_ms_hi80 * SLACK).all()
            assert (timed.model_post_ms >= timed.model_device_ms).all()
            # no faster than the chip's peak, nor than moving the operands and output once
            assert (flops(m, k, n) / t <= c.peak_flops[dtype] * SLACK).all(), timed
            least = hbm_bytes(search.Case("xla", dtype, m, k, n))
            assert (least / t <= c.hbm_bytes_per_s * SLACK).all(), timed
            assert ((timed.peak_flops_pct <= 100 * SLACK) & (timed.hbm_bandwidth_pct <= 100 * SLACK)).all()
            assert set(timed.bound) <= {"compute", "bandwidth", "overhead"}
            line = mine.recommendation.iloc[0]
            assert isinstance(line, str) and line and "nan" not in line
            assert (mine.recommendation == line).all()


def check_text(out: str, asked, layout: bool) -> None:
    shapes, _, targets = asked
    assert not re.search(r"\bnan\b|\binf\b", out, re.IGNORECASE), out
    if layout:
        assert out.count("projections,") == len(targets), out
        return
    first = out.splitlines()[0]
    assert first.startswith(("Use blocks (bm, bk, bn) = (", "Use XLA for ", "No recommendation for ")), first
    assert out.count("\nrank  blocks (bm,bk,bn)") == len(shapes) * len(targets), out
    assert out.count("Why: ") == len(shapes) * len(targets)


def test_the_stand_in_keeps_the_vmem_rules_the_search_bounds_with():
    """The stand-in never asks less VMEM than the search's floor says a compile asks (a floor above
    it would skip blocks that fit): checked on every candidate of a few shapes."""
    for target, version in (("v5e", "0.0.42.1"), ("7x", "0.0.52")):
        compiler = StandInCompiler(target)
        for shape in ((8192, 4096, 14336), (16, 4096, 14336), (8205, 2949, 5921)):
            for x in candidates("v5", "bfloat16", shape, target):
                result = compiler.compile(x.case, 1 << 40)
                assert result["vmem_bytes"] >= search.vmem_floor(x.case, version)[0]


def test_a_refused_request_does_no_work(run_folder):
    """Refusals come before any compile: the stand-in is never asked."""
    asked = []
    with stand_in(run_folder):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(StandInCompiler, "compile", lambda self, *a, **k: asked.append(a))
            for argv in (["0x1x1"], ["128x128x128", "--vmem-limit", "1MiB"], ["128x128x128", "--dtype", "f8"],
                         ["128x128x128", "--time-budget", "soon"], ["9999999x9999999x9"]):
                code, out, err = call(argv)
                assert code == 2 and len(err.strip().splitlines()) == 1 and not out, (argv, err)
    assert not asked


@pytest.mark.compiler
@pytest.mark.slow
@pytest.mark.parametrize("argv", [
    ["4096x4096x4096", "--dtype", "float32", "--target", "v6e"],  # XLA's float32 context once crashed it
    ["16x4096x14336", "--target", "v5e"],  # decode: bound by reading the weights
    ["1000x3000x500", "--dtype", "int8", "--target", "v6e"],  # no MXU-wide edge divides it: padded
])
def test_real_queries_with_the_real_compiler(run_folder, argv):
    with contextlib.chdir(run_folder):
        code, out, err = call([*argv, "--csv"])
        assert code == 0 and "Traceback" not in err, err
        check_table(pd.read_csv(io.StringIO(out)), answered_request(argv, run_folder))
        code, text, err = call(argv)  # the compiles from the cache now
    assert code == 0, err
    check_text(text, answered_request(argv, run_folder), layout=False)


@settings(max_examples=4 * EXAMPLES, deadline=None)
@given(shape=st.tuples(*(st.sampled_from([128, 256, 384, 1024, 2048, 4096, 14336]),) * 3),
       dtype=st.sampled_from(["bfloat16", "float32", "int8"]), target=st.sampled_from(["v5e", "v6e", "7x"]),
       constants=st.tuples(*(st.floats(0, 2000),) * 4, st.floats(0, 20), st.floats(0.05, 1)))
def test_the_cheap_bound_never_exceeds_the_exact_one(shape, dtype, target, constants):
    """Branch and bound prunes by the cheap bound first: it must not pass the exact bound (the model
    without compiler cycles) for any constants in their ranges, or a candidate that could win is dropped."""
    dma, step, overlapped, call, per_kib, fraction = constants
    k = search.tm.Constants(dma_cycles=dma, call_seconds=call * 1e-6, float32_cycles_per_kib=per_kib,
                            overlapped_step_cycles=overlapped, step_cycles=step, bandwidth_fraction=fraction)
    for x in candidates("v5", dtype, shape, target)[::7]:
        assert search.cheap_bound(x.case, target, k) <= search.lower_bound(x.case, target, k) * SLACK


def test_a_target_s_workers_start_once_for_all_its_shapes(run_folder):
    """Starting a compile worker imports jax and libtpu (seconds): one call keeps each target's
    workers across its shapes, so three shapes on two targets start two pairs, not six."""
    started = []
    with stand_in(run_folder), pytest.MonkeyPatch.context() as mp:
        original = StandInCompiler.__init__

        def counted(self, target, **kwargs):
            started.append((target, kwargs.get("profile", False)))
            original(self, target, **kwargs)

        mp.setattr(StandInCompiler, "__init__", counted)
        code, out, err = call(["1024x1024x1024", "2048x1024x4096", "512x4096x1024", "--target", "v5e",
                               "--target", "v6e", "--workers", "1"])
    assert code == 0, err
    assert sorted(started) == [("v5e", False), ("v5e", True), ("v6e", False), ("v6e", True)]
