"""advise SHAPE [SHAPE ...] | --model NAME --tokens T | --shapes-file FILE
       [--dtype D] [--target T ...] [--vmem-limit SIZE] [--time-budget SECONDS] [--csv | --json]"""
import argparse
import contextlib
import logging
import math
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

import pandas as pd

# submodules by name: the package's advise() imports this module
import tpu_matmul_repro.advise.model as advisor_model
import tpu_matmul_repro.advise.ranking as ranking
import tpu_matmul_repro.advise.request as request
import tpu_matmul_repro.advise.search as search
import tpu_matmul_repro.advise.whole_models as whole_models
import tpu_matmul_repro.advise.workers as compile_workers
from tpu_matmul_repro.advise.progress import Reporter, Search
from tpu_matmul_repro.advise.request import AdviceError
from tpu_matmul_repro.experiments.core.chips import POST_CHIP, advised_targets
from tpu_matmul_repro.report.advice import BUDGET_SPENT

ROOT = Path(__file__).resolve().parents[1]
NO_RESULTS = "none"  # --results none: never read a run's model
TIME_BUDGET_S = 180  # --time-budget's default: then the advisor answers with what it compiled
DURATION = re.compile(r"([0-9]+)\s*(s|min)?")


class Stopped(BaseException):
    """SIGTERM or SIGHUP: raised in the main thread, so that every worker is stopped on the way out."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one line (AdviceError), reading '-1x128x128' as a shape, not an option."""

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
                   help=f"TPU generation, one of {', '.join(advised_targets())}; repeat for several "
                   f"(default {POST_CHIP})")
    p.add_argument("--kernel", default="v5", help="blocked Pallas kernel (default v5: f32 accumulator)")
    p.add_argument("--vmem-limit", help="scoped-VMEM limit to rank at, whole MiB, e.g. 32MiB (default: each "
                                        "target's default limit)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--csv", action="store_true", help="CSV on stdout, every column")
    out.add_argument("--json", action="store_true", help="JSON records on stdout, every column")
    p.add_argument("--results", default=None,
                   help="a pipeline run's results/ whose timing model to use (default: ./results of the "
                        "current folder where it has one, else the advisor's own fit; 'none': the "
                        "advisor's own fit)")
    p.add_argument("--time-budget", default=str(TIME_BUDGET_S), metavar="SECONDS",
                   help=f"compile for at most this long, e.g. 90 or 5min (default {TIME_BUDGET_S} s), then "
                        "answer with what was compiled and say what was not; the one-off fit of the "
                        "model is not counted")
    p.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml",
                   help="config for compile settings and toolchains (default config/config.yaml)")
    p.add_argument("--workers", default="2", help="pairs of compile workers at once (default 2: a 2-core "
                                                  "machine's cores)")
    p.add_argument("-v", "--verbose", action="store_true", help="log the compiles on stderr")
    return p.parse_args(argv)


def presets() -> list[str]:
    from tpu_matmul_repro.experiments.plan.config import load_yaml

    return list(load_yaml(whole_models.PRESETS))


def compiler_for(target: str, config: dict) -> dict:
    """The compiler of `target`: the pipeline's own, or the toolchain serving it (installed on first use)."""
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


def layout_of(args) -> whole_models.Layout | None:
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
        return whole_models.preset(args.model, tokens)
    if args.shapes_file:
        return whole_models.from_file(args.shapes_file, tokens)
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


def results_of(text: str | None) -> tuple[Path | None, str]:
    """(the results/ folder whose model to use, or None; why none): --results, else ./results if any."""
    if text == NO_RESULTS:
        return None, "--results none"
    if text is not None:
        return Path(text), ""
    here = Path.cwd() / "results"
    if here.is_dir():
        return Path("results"), ""
    return None, "no ./results in the current folder; --results DIR names a run's"


def time_budget(text: str) -> float:
    """'180', '90s', '5min' -> seconds; AdviceError naming the value otherwise."""
    found = DURATION.fullmatch(str(text).strip())
    if not found or int(found.group(1)) < 1:
        raise AdviceError(f"--time-budget {text!r}: expected a whole number of seconds from 1, e.g. 90 or "
                          "5min")
    seconds = int(found.group(1)) * (60 if found.group(2) == "min" else 1)
    if seconds > 7 * 24 * 3600:
        raise AdviceError(f"--time-budget {text!r}: more than a week")
    return float(seconds)


@contextlib.contextmanager
def stopped_by_signals():
    """SIGTERM and SIGHUP raise Stopped in the main thread, so the compile workers are stopped; later
    signals, while the call winds down, are ignored. Off the main thread nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signals = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
    before = {s: signal.getsignal(s) for s in signals}

    def stop(signum, frame):
        for s in signals:
            signal.signal(s, signal.SIG_IGN)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Stopped(signum)

    for s in signals:
        if before[s] != signal.SIG_IGN:  # a shell's background job ignores SIGINT: it keeps doing so
            signal.signal(s, stop)
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)


def main(argv=None) -> int:
    """The command: exit 0 with the advice, 2 with one line naming what is wrong with the request; on
    signals and a closed stdout as docs/advisor.md says (130, 128 + the signal, 141)."""
    with stopped_by_signals():
        try:
            return answer(sys.argv[1:] if argv is None else argv)
        except KeyboardInterrupt:
            say("advise: interrupted (Ctrl-C); its compile workers are stopped, the compile cache keeps "
                "what finished")
            return 130
        except Stopped as e:
            say(f"advise: stopped by {signal.Signals(e.signum).name}; its compile workers are stopped, the "
                "compile cache keeps what finished")
            return 128 + e.signum


def say(line: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)


def quiet_stdout() -> None:
    """stdout closed by its reader: the rest of the output, and Python's flush at exit, go nowhere."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def answer(argv) -> int:
    try:
        args = arguments(argv)
        logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                            format="%(asctime)s %(name)s: %(message)s")
        for handler in logging.getLogger().handlers:  # the answer says it once, not each compile's log
            handler.addFilter(lambda record: BUDGET_SPENT not in record.getMessage())
        targets = args.targets or [POST_CHIP]
        for target in targets:
            if target not in advised_targets():
                raise AdviceError(f"--target {target!r}: expected one of {', '.join(advised_targets())}")
        layout = layout_of(args)
        if not request.DIGITS.fullmatch(args.workers) or not 1 <= int(args.workers) <= 64:
            raise AdviceError(f"--workers {args.workers!r}: expected a whole number from 1 to 64")
        limit = request.parse_vmem_limit(args.vmem_limit) if args.vmem_limit is not None else None
        budget = time_budget(args.time_budget)
        shapes = layout.shapes if layout else args.shapes
        asked = request.checked(shapes, args.dtype, targets, args.kernel, limit)
        config = checked_config(args.config)
        results, why = results_of(args.results)
        if results is not None:
            advisor_model.from_results(results)  # a wrong file is refused here, before any compile
        compilers = {target: compiler_for(target, config) for target in asked.targets}
    except AdviceError as e:
        say(f"advise: {e}")
        return 2
    try:
        with Reporter() as reporter:
            parts, texts = advice(asked, config, compilers, results, workers=int(args.workers),
                                  reporter=reporter, budget_s=budget, why_no_results=why)
    except AdviceError as e:
        say(f"advise: {e}")
        return 2
    try:
        if args.csv:
            pd.concat(parts, ignore_index=True).to_csv(sys.stdout, index=False)
        elif args.json:
            print(ranking.as_json(pd.concat(parts, ignore_index=True)))
        elif layout:
            print("\n\n".join(model_texts(layout, asked, parts)))
        else:
            print("\n\n".join(texts))
        sys.stdout.flush()  # here, where a closed stdout is caught, not at exit
    except BrokenPipeError:  # its reader has gone (`advise ... | head -1`): nothing more to say
        quiet_stdout()
        return 141
    return 0


def model_texts(layout: whole_models.Layout, asked: request.Request, parts: list[pd.DataFrame]) -> list[str]:
    from tpu_matmul_repro.experiments.core.chips import chip

    out = []
    for target in asked.targets:
        mine = {tuple(int(x) for x in (t.m.iloc[0], t.k.iloc[0], t.n.iloc[0])): t
                for t in parts if len(t) and t.target.iloc[0] == target}
        summary = whole_models.totals(layout, mine)
        first = next(iter(mine.values()))
        words = whole_models.text(layout, target, chip(target).device_kind, asked.dtype, asked.kernel,
                                  summary)
        out.append(f"{words}\nModelled, not measured: {first.interval.iloc[0]}; model: "
                   f"{first.model_source.iloc[0]}.")
    return out


def advise(shapes, *, dtype: str = "bfloat16", targets=(POST_CHIP,), kernel: str = "v5",
           vmem_limit: str | int | None = None, results="results", config=None,
           workers: int = 2) -> pd.DataFrame:
    """The advisor as a function: the ranked table (every column of --csv) of `shapes` on `targets`;
    AdviceError for a refused request. `vmem_limit`: bytes or "32MiB"; `results` None: the advisor's
    own fit; `config`: a dict or file. No time budget."""
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
    from tpu_matmul_repro.experiments.plan.job_lists import compile_jobs

    jobs = compile_jobs({**config, "targets": [target]})
    return tuple(c for key, job in jobs.items() if key[1] == "xla" for c in job.cases)


def advice(asked: request.Request, config: dict, compilers: dict, results: Path | None, *,
           fallback: bool = True, log=None, workers: int = 1, reporter: Reporter | None = None,
           budget_s: float | None = None, why_no_results: str = "--results none", public: bool = True):
    """The ranked table (one frame per target and shape) and its text, for a checked request; with
    fallback False (the pipeline), only the run's own model. `budget_s`: seconds of compiling from the
    first search (None: no limit); `public`: use the run's public scores where it has them."""
    from tpu_matmul_repro.experiments.compile_study import cache
    from tpu_matmul_repro.experiments.core.provenance import provenance
    from tpu_matmul_repro.experiments.plan.job_lists import compile_settings

    log = log or logging.getLogger(__name__)
    versions = {k: v for k, v in provenance().items() if k.endswith("_version")}
    if reporter and advisor_model.fits_here(results, versions):
        reporter.fitting()
    fitted = advisor_model.load(config, results, versions, fallback=fallback, absent=why_no_results,
                                public=public)
    settings = {k: v for k, v in compile_settings(config).items()
                if k in ("timeout_s", "profile_max_steps", "skip_dominated")}
    deadline = None if budget_s is None else time.monotonic() + budget_s
    if reporter:
        reporter.deadline = deadline
    searches = [(target, shape) for target in asked.targets for shape in asked.shapes]
    parts, texts = [], []
    with compile_workers.limits(deadline, reporter.done_one if reporter else None), \
            contextlib.ExitStack() as held:
        pools = {}  # per target, kept across its searches: a worker starts once, not once per shape
        for i, (target, shape) in enumerate(searches):
            if target not in pools:
                pools[target] = held.enter_context(compile_workers.Workers(
                    target, compilers[target], settings["timeout_s"], workers))
            baseline = baseline_cases(config, target)
            if reporter:
                reporter.searching(searched(asked, target, shape, compilers[target], baseline), i + 1,
                                   len(searches))
            before = dict(cache.TOTALS)
            found = search.search(shape, asked.dtype, target, asked.kernel, fitted, compilers[target],
                                  settings, vmem_limit_bytes=asked.vmem_limit_bytes, baseline=baseline,
                                  workers=workers, pool=pools[target])
            hits, misses = (cache.TOTALS[k] - before[k] for k in ("hits", "misses"))
            log.info("advice %s on %s: %d of %d compiles from the compile cache, %d compiled here",
                     "x".join(map(str, shape)), target, hits, hits + misses, misses)
            ranked = ranking.ranked(found, fitted, target)
            parts.append(ranked)
            texts.append(ranking.text(ranked, header(ranked, found, shape, asked, target, fitted),
                                      xla_losses(fitted, target)))
    if reporter:
        reporter.finish(summary(parts))
    return parts, texts


def searched(asked: request.Request, target: str, shape, compiler: dict, baseline) -> Search:
    """What one search has to do, counted before it starts (its progress lines' totals)."""
    from tpu_matmul_repro.advise.candidates import candidates
    from tpu_matmul_repro.experiments.compile_study.study import job_versions
    from tpu_matmul_repro.experiments.core.chips import chip

    libtpu = job_versions(compiler.get("versions"))["libtpu_version"]
    limit = asked.vmem_limit_bytes or chip(target).default_vmem_limit_bytes
    found = [x.case for x in candidates(asked.kernel, asked.dtype, shape, target)]
    out = sum(search.vmem_floor(case, libtpu)[0] > limit for case in found)
    xla = len(search.xla_context(baseline, asked.dtype, shape)) + 1
    m, k, n = shape
    return Search(f"{target} {m}x{k}x{n} {asked.dtype}", len(found), out, len(found) - out + xla)


def summary(parts: list[pd.DataFrame]) -> str:
    """The progress's last line: what the call compiled, and what it left."""
    rows = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=ranking.COLUMNS)
    spent = int(ranking.budget_spent(rows).sum())
    pruned = int((rows.status == search.PRUNED).sum())
    words = [f"{len(parts)} search" + ("" if len(parts) == 1 else "es")]
    if pruned:
        words.append(f"{pruned} candidate blocks ruled out by the bound without a compile")
    if spent:
        words.append(f"{spent} configurations not compiled: the time budget ran out")
    return "; ".join(words)


def header(ranked: pd.DataFrame, found, shape, asked, target: str, fitted) -> list[str]:
    from tpu_matmul_repro.experiments.core.chips import MiB, chip

    c = chip(target)
    pallas = ranked[ranked.kernel != "xla"]
    counts = pallas.status.value_counts().to_dict()
    libtpu = ", ".join(sorted(set(ranked.libtpu_version.dropna().astype(str)))) or "?"
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
    lines += public_lines(fitted, target)
    timed = ranked[ranked.model_device_ms.notna()]
    if len(timed):  # each row has its own (its size band, widened by the refits' spread): the first's
        lines.append(f"Intervals (of the first row): {timed.interval.iloc[0]}.")
    if not m == k == n:
        lines.append("Non-square: the model was fitted on the post's square problems only (m = k = n); "
                     "its per-step costs carry over, but no published number checks it at this aspect.")
    return lines


def public_lines(fitted, target: str) -> list[str]:
    """The run's public scores of the target, where its results/ has them (advise/model.PublicScores)."""
    p = fitted.public.get(target)
    if p is None:
        return []
    floor = "; its band here is never narrower than their errors" if target != POST_CHIP else ""
    return [f"On {target}, {p.n} public measurements ({p.path}, never fitted on): median error "
            f"{100 * (math.exp(p.median_abs_log_ratio) - 1):.1f} %, 80 % coverage {p.coverage80:.2f} (the "
            f"pipeline's band){floor}."]


def xla_losses(fitted, target: str) -> str:
    """How often the model's pick lost to a measured XLA on the target (the run's public scores)."""
    p = fitted.public.get(target)
    if p is None:
        return ""
    if not p.pallas_picks_vs_xla:
        return (f"Against public measurements on {target}: no shape there has a block measured beside XLA, "
                "so no pick of the model's has been checked against a measured XLA.")
    return (f"Against public measurements on {target}: of {p.shapes} shapes with several configurations "
            f"measured, the model picked a block measured beside XLA at {p.pallas_picks_vs_xla}, and that "
            f"block lost to the measured XLA at {p.losses_to_xla}.")

