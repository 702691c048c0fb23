"""advise SHAPE [SHAPE ...] | --model NAME --tokens T | --shapes-file FILE
       [--dtype D] [--target T ...] [--vmem-limit SIZE] [--csv | --json]"""
import argparse
import logging
import re
import sys
from pathlib import Path

import pandas as pd

# submodules by name: the package's advise() imports this module
import tpu_matmul_repro.advise.model as advisor_model
import tpu_matmul_repro.advise.models as models
import tpu_matmul_repro.advise.request as request
import tpu_matmul_repro.advise.search as search
import tpu_matmul_repro.advise.table as table
from tpu_matmul_repro.advise.request import AdviceError
from tpu_matmul_repro.experiments.core.chips import POST_CHIP

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("v5e", "v6e", "v5p", "7x")  # v4: libtpu's static profiler crashes on it (no cycles)
NO_RESULTS = "none"  # --results none: never read a run's model


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one line (AdviceError), and which reads an argument such as
    '-1x128x128' as a (negative) shape, not as an unknown option."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-[0-9]")

    def error(self, message):
        raise AdviceError(message)


def arguments(argv):
    p = Parser(prog="advise", description=__doc__.strip(),
               epilog="Every number is an estimate for the target, never a measurement (docs/advisor.md).")
    p.add_argument("shapes", nargs="*", metavar="MxKxN", help="problem C[m, n] = A[m, k] @ B[k, n]")
    p.add_argument("--model", help=f"a whole model's projections ({', '.join(presets())}); with --tokens")
    p.add_argument("--shapes-file", type=Path, help="a YAML file of projections (docs/advisor.md)")
    p.add_argument("--tokens", help="tokens per batch: m of every projection of --model or --shapes-file")
    p.add_argument("--dtype", default="bfloat16", help="operand dtype (default bfloat16)")
    p.add_argument("--target", action="append", dest="targets", metavar="TARGET",
                   help=f"TPU generation, one of {', '.join(TARGETS)}; repeat for several "
                   f"(default {POST_CHIP})")
    p.add_argument("--kernel", default="v5", help="blocked Pallas kernel (default v5: f32 accumulator)")
    p.add_argument("--vmem-limit", help="scoped-VMEM limit to rank at, whole MiB, e.g. 32MiB (default: each "
                                        "target's default limit)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--csv", action="store_true", help="CSV on stdout, every column")
    out.add_argument("--json", action="store_true", help="JSON records on stdout, every column")
    p.add_argument("--results", default=str(ROOT / "results"),
                   help="a pipeline run's results/ whose timing model to use (default ./results; 'none': "
                        "the advisor's own fit)")
    p.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml",
                   help="config for compile settings and toolchains (default config/config.yaml)")
    p.add_argument("--workers", default="2", help="pairs of compile workers at once (default 2: a 2-core "
                                                  "machine's cores)")
    p.add_argument("-v", "--verbose", action="store_true", help="log the compiles on stderr")
    return p.parse_args(argv)


def presets() -> list[str]:
    from tpu_matmul_repro.experiments.plan.config import load_yaml

    return list(load_yaml(models.PRESETS))


def compiler_for(target: str, config: dict) -> dict:
    """The compiler of `target`: the pipeline's own, or a toolchain the config has serve it, whose
    environment is built with pip on first use (experiments/compile_study/toolchain_env.py)."""
    from tpu_matmul_repro.experiments.plan import toolchains

    served = toolchains.served(config)
    if target not in served:
        primary = toolchains.primary(config)
        return dict(toolchain=primary, static_profile=toolchains.parse(config)[primary].static_profile)
    from tpu_matmul_repro.experiments.compile_study import toolchain_env

    tc = toolchains.parse(config)[served[target]]
    try:
        manifest = toolchain_env.ensure(tc, toolchains.env_path(config, tc))
    except toolchain_env.ToolchainInstallError as e:
        first = str(e).splitlines()[0]
        raise AdviceError(f"--target {target}: its compiler could not be installed: {first}") from None
    return dict(toolchain=tc.name, static_profile=tc.static_profile, python=manifest["python"],
                env=dict(tc.environment), versions=manifest["versions"])


def layout_of(args) -> models.Layout | None:
    """The --model or --shapes-file request, checked; None for plain shapes."""
    tokens = None
    if args.tokens is not None:
        if not request.DIGITS.fullmatch(args.tokens) or int(args.tokens) < 1:
            raise AdviceError(f"--tokens {args.tokens!r}: expected a whole number of tokens from 1")
        tokens = int(args.tokens)
    given = [x for x in (args.shapes, args.model, args.shapes_file) if x]
    if len(given) > 1:
        raise AdviceError("give shapes, --model or --shapes-file, one of them")
    if args.model:
        return models.preset(args.model, tokens)
    if args.shapes_file:
        return models.from_file(args.shapes_file, tokens)
    if tokens is not None:
        raise AdviceError("--tokens: only with --model or --shapes-file")
    return None


def checked_config(path: Path) -> dict:
    from tpu_matmul_repro.experiments.plan.config import ConfigError, checked, load_yaml

    try:
        loaded = load_yaml(path)
    except ConfigError as e:  # its message names the file
        raise AdviceError(f"--config {e}") from None
    try:
        return checked(loaded)
    except ConfigError as e:
        raise AdviceError(f"--config {path}: {str(e).splitlines()[0]}") from None


def results_of(text: str | None) -> Path | None:
    return None if text is None or text == NO_RESULTS else Path(text)


def main(argv=None) -> int:
    try:
        args = arguments(sys.argv[1:] if argv is None else argv)
        logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                            format="%(asctime)s %(name)s: %(message)s")
        targets = args.targets or [POST_CHIP]
        for target in targets:
            if target not in TARGETS:
                raise AdviceError(f"--target {target!r}: expected one of {', '.join(TARGETS)}")
        layout = layout_of(args)
        if not request.DIGITS.fullmatch(args.workers) or not 1 <= int(args.workers) <= 64:
            raise AdviceError(f"--workers {args.workers!r}: expected a whole number from 1 to 64")
        limit = request.parse_vmem_limit(args.vmem_limit) if args.vmem_limit is not None else None
        shapes = layout.shapes if layout else args.shapes
        asked = request.checked(shapes, args.dtype, targets, args.kernel, limit)
        config = checked_config(args.config)
        results = results_of(args.results)
        if results is not None:
            advisor_model.from_results(results)  # a wrong file is refused here, before any compile
        compilers = {target: compiler_for(target, config) for target in asked.targets}
    except AdviceError as e:
        print(f"advise: {e}", file=sys.stderr)
        return 2
    try:
        parts, texts = advice(asked, config, compilers, results, workers=int(args.workers))
    except AdviceError as e:
        print(f"advise: {e}", file=sys.stderr)
        return 2
    if args.csv:
        pd.concat(parts, ignore_index=True).to_csv(sys.stdout, index=False)
    elif args.json:
        print(table.as_json(pd.concat(parts, ignore_index=True)))
    elif layout:
        print("\n\n".join(model_texts(layout, asked, parts)))
    else:
        print("\n\n".join(texts))
    return 0


def model_texts(layout: models.Layout, asked: request.Request, parts: list[pd.DataFrame]) -> list[str]:
    from tpu_matmul_repro.experiments.core.chips import chip

    out = []
    for target in asked.targets:
        mine = {tuple(int(x) for x in (t.m.iloc[0], t.k.iloc[0], t.n.iloc[0])): t
                for t in parts if len(t) and t.target.iloc[0] == target}
        summary = models.totals(layout, mine)
        first = next(iter(mine.values()))
        words = models.text(layout, target, chip(target).device_kind, asked.dtype, asked.kernel, summary)
        pallas = pd.concat([t[t.kernel != "xla"] for t in mine.values()], ignore_index=True)
        lines = extrapolation_caveat(pallas, target, libtpu_of(pallas))
        caveat = "".join(f"\n{line}" for line in lines)
        out.append(f"{words}\nModelled, not measured: {first.interval.iloc[0]}; model: "
                   f"{first.model_source.iloc[0]}.{caveat}")
    return out


def advise(shapes, *, dtype: str = "bfloat16", targets=(POST_CHIP,), kernel: str = "v5",
           vmem_limit: str | int | None = None, results=ROOT / "results", config=None,
           workers: int = 2) -> pd.DataFrame:
    """The advisor as a function: the ranked table (every column of --csv) of `shapes` ("MxKxN" or
    (m, k, n)) on `targets`; AdviceError in one line for a request it refuses. `vmem_limit`: bytes or
    a size such as "32MiB"; `results`: a run's results/ (None: the advisor's own fit); `config`: a
    config dict or file (default config/config.yaml)."""
    limit = request.parse_vmem_limit(vmem_limit) if isinstance(vmem_limit, str) else vmem_limit
    asked = request.checked(list(shapes), dtype, list(targets), kernel, limit)
    config = checked_config(ROOT / "config" / "config.yaml" if config is None else Path(config)) \
        if not isinstance(config, dict) else config
    results = None if results is None else Path(results)
    if results is not None:
        advisor_model.from_results(results)
    compilers = {target: compiler_for(target, config) for target in asked.targets}
    parts, _ = advice(asked, config, compilers, results, workers=workers)
    return pd.concat(parts, ignore_index=True)


def baseline_cases(config: dict, target: str) -> tuple:
    """The config's XLA baseline cases (the planner's), which the XLA estimate's envelope compares with."""
    from tpu_matmul_repro.experiments.plan.jobs import compile_jobs

    jobs = compile_jobs({**config, "targets": [target]})
    return tuple(c for key, job in jobs.items() if key[1] == "xla" for c in job.cases)


def advice(asked: request.Request, config: dict, compilers: dict, results: Path | None, *,
           fallback: bool = True, log=None, workers: int = 1):
    """The ranked table (one frame per target and shape) and its text, for a checked request; with
    fallback False (the pipeline), only the run's own model. `log`: where to say how many compiles came
    from the compile cache (default: this module's logger)."""
    from tpu_matmul_repro.experiments.compile_study import cache
    from tpu_matmul_repro.experiments.core.provenance import provenance
    from tpu_matmul_repro.experiments.plan.jobs import compile_settings

    log = log or logging.getLogger(__name__)
    versions = {k: v for k, v in provenance().items() if k.endswith("_version")}
    fitted = advisor_model.load(config, results, versions, fallback=fallback)
    settings = {k: v for k, v in compile_settings(config).items()
                if k in ("timeout_s", "profile_max_steps", "skip_dominated")}
    parts, texts = [], []
    for target in asked.targets:
        baseline = baseline_cases(config, target)
        for shape in asked.shapes:
            before = dict(cache.TOTALS)
            found = search.search(shape, asked.dtype, target, asked.kernel, fitted, compilers[target],
                                  settings, vmem_limit_bytes=asked.vmem_limit_bytes, baseline=baseline,
                                  workers=workers)
            hits, misses = (cache.TOTALS[k] - before[k] for k in ("hits", "misses"))
            log.info("advice %s on %s: %d of %d compiles from the compile cache, %d compiled here",
                     "x".join(map(str, shape)), target, hits, hits + misses, misses)
            ranked = table.ranked(found, fitted, target)
            parts.append(ranked)
            texts.append(table.text(ranked, header(ranked, found, shape, asked, target, fitted)))
    return parts, texts


def header(ranked: pd.DataFrame, found, shape, asked, target: str, fitted) -> list[str]:
    from tpu_matmul_repro.experiments.core.chips import MiB, chip

    c = chip(target)
    pallas = ranked[ranked.kernel != "xla"]
    counts = pallas.status.value_counts().to_dict()
    libtpu = libtpu_of(ranked)
    m, k, n = shape
    default = c.default_vmem_limit_bytes
    limit = (f"{target}'s default" if found.limit == default
             else f"asked; {target}'s default is {default / MiB:.0f} MiB")
    lines = [f"{m}x{k}x{n} {asked.dtype} on {target} ({c.device_kind}), kernel {asked.kernel}: "
             f"{len(pallas)} candidate blocks; " + ", ".join(f"{v} {s}" for s, v in sorted(counts.items())),
             f"Ranked at a scoped-VMEM limit of {found.limit / MiB:.0f} MiB ({limit}); physical VMEM "
             f"{c.vmem_bytes / MiB:.0f} MiB per core. Block edges up to the whole dimension wherever the "
             "blocks' own buffers fit the limit."]
    padded = pallas.padded_shape.fillna("").astype(bool)
    if padded.any():
        lines.append(f"Padding: {padded.sum()} candidates run on the problem zero-padded to whole blocks "
                     "(the note says to what), charged the padded FLOPs and bytes (the padding copy itself "
                     "not included); every TFLOP/s counts the shape's own FLOPs. XLA: the shape as it is.")
    lines.append(f"Modelled, not measured: libtpu {libtpu}'s deviceless compile for {target} through "
                 f"the timing model ({fitted.source}).")
    lines += extrapolation_caveat(pallas, target, libtpu)
    timed = ranked[ranked.model_device_ms.notna()]
    if len(timed):  # each row has its own (its size band, widened by the refits' spread): the first's
        lines.append(f"Intervals (of the first row): {timed.interval.iloc[0]}.")
    if not m == k == n:
        lines.append("Non-square: the model was fitted on the post's square problems only (m = k = n); "
                     "its per-step costs carry over, but no published number checks it at this aspect.")
    return lines


def libtpu_of(rows: pd.DataFrame) -> str:
    """The libtpu versions the rows were compiled with, as the header names them."""
    return ", ".join(sorted(set(rows.libtpu_version.dropna().astype(str)))) or "?"


def extrapolation_caveat(pallas: pd.DataFrame, target: str, libtpu: str) -> list[str]:
    """A line where the candidates' cycles are extrapolated from small grids and the fit's recorded
    errors for this target and libtpu (data/extrapolation_check.csv) exceed what the tests allow."""
    from tpu_matmul_repro.experiments.compile_study import extrapolate

    extrapolated = int((pallas.cycles_method == "extrapolated").sum())
    found = extrapolate.inexact(target, libtpu)
    if not extrapolated or not found:
        return []
    lo, hi, blocks = found
    return [f"Cycles of {extrapolated} candidates are extrapolated from small grids, and for {target} that "
            f"fit is inexact: against full static profiles of {blocks} blocks (libtpu {libtpu}) it was "
            f"off by {lo:+.1f} % to {hi:+.1f} % (data/extrapolation_check.csv). The "
            "intervals do not include that error."]
