"""Every claim of the post (REGISTRY), checked against this run's table (results/claims.csv): per
claim its rule, the post's value and this run's, their source, the verdict, its reason and the
values it is recomputed from (verdict_of). The rules and the evidence: docs/verdicts.md."""
import dataclasses
import json
import math

import numpy as np
import pandas as pd

from tpu_matmul_repro.analysis import timing_model as tm
from tpu_matmul_repro.analysis.number_classes import CLASS_NAMES, number_class
from tpu_matmul_repro.analysis.runs import latest_runs
from tpu_matmul_repro.analysis.summaries import blocks_text, default_limit, post_configs
from tpu_matmul_repro.experiments.core.chips import POST_CHIP, chip
from tpu_matmul_repro.experiments.core.i18n import N_
from tpu_matmul_repro.experiments.core.units import MiB, flops, tflops
from tpu_matmul_repro.kernels import is_pallas

TARGET = POST_CHIP
ABOUT = 0.2  # "about" a number: within |ln(ours / claimed)| <= 0.2 (a factor of 1.22)
NEAR = 0.9  # "nearly matches": at least 90 % of XLA's TFLOP/s
LEVEL = 0.8  # the prediction interval a modelled speed's verdict is decided with
TOOLCHAIN = "current"  # the pipeline's own toolchain
# The post's numbers are read off its figures by pixel position to about 2 % of the y axis's range
# (data/published_v5e.csv); an axis spans its points from about 0 to their largest with matplotlib's
# 5 % margins either side.
READING_ERROR = 0.02
AXIS_MARGINS = 1.1

@dataclasses.dataclass(frozen=True)
class Claim:
    """One claim of the post: its `wording`, its `kind` (RULES, checked by CHECKS[kind]) and the
    configuration it is about; `claimed`: the post's number ("about"); `versus`: the (experiment,
    kernel, dtype) it beats with the same blocks ("beats")."""

    id: str
    kind: str
    wording: str
    experiment: str
    kernel: str
    dtype: str
    blocks: tuple[int, int, int] | None = None
    size: int = 8192
    claimed: float | None = None
    versus: tuple[str, str, str] | None = None


# The post's claims, in the order claims.csv and the report list them (docs/development.md: add a claim).
REGISTRY = (
    Claim("v1_fails_above_1024", "compiles", N_("v1 (whole arrays in VMEM) fails above 1024"),
          "v1", "v1", "float32"),
    Claim("v2_up_to_2048", "compiles", N_("v2 (N = 4 split grid) handles sizes up to 2048"),
          "v2", "v2", "float32"),
    Claim("v3_128_about_10", "about", N_("v3 with 128-blocks reaches about 10 TFLOP/s"),
          "v3", "v3", "float32", (128, 128, 128), claimed=10.0),
    Claim("v4_best_512", "best", N_("v4's best float32 blocks are (512, 512, 512)"),
          "v4", "v3", "float32", (512, 512, 512)),
    Claim("v5_matches_xla", "near",
          N_("v5 with (512, 1024, 1024) blocks nearly matches XLA (bfloat16, 8192)"),
          "v5", "v5", "bfloat16", (512, 1024, 1024)),
    Claim("bf16_beats_f32", "beats", N_("bfloat16 (v5) beats float32 (v4) with the same blocks"),
          "v5", "v5", "bfloat16", (512, 512, 512), versus=("v4", "v3", "float32")),
    Claim("v5_1024_fails_from_2048", "compiles", N_("(1024, 1024, 1024) blocks in bfloat16 fail from 2048"),
          "v5", "v5", "bfloat16", (1024, 1024, 1024)),
)


def registry() -> dict[str, Claim]:
    """The claims by id (REGISTRY, read when called: a test may add one)."""
    return {c.id: c for c in REGISTRY}


KIND_NAMES = {"compiles": N_("compiles up to / fails from"), "about": N_("about a number"),
              "best": N_("best blocks"), "near": N_("nearly matches"), "beats": N_("beats")}
RULES = {
    "compiles": N_("Over the sizes both this run and the post tried: holds where this run's largest size "
                   "that compiles at the default scoped-VMEM limit and its first size that fails are the "
                   "post's; differs otherwise. Test: the compiler's VMEM verdict (or, where this run "
                   "measured every size, the measurement's status) against the post's."),
    "about": N_("\"About X\" is within a factor of %(about_factor).2f of X (|ln(number / X)| <= %(about)s). "
                "Test: this run's number and its 80 %% band against X, and the post's own number against "
                "X."),
    "best": N_("The claimed blocks must be the fastest of the post's blocks at that size. Test: this run's "
               "claimed blocks against its fastest other blocks (their ratio and its 80 %% band), and the "
               "post's numbers against each other."),
    "near": N_("\"Nearly matches\" is at least %(near_pct).0f %% of XLA's TFLOP/s. Test: this run's ratio "
               "(both modelled the same way, both measured, or against the post's measured XLA where this "
               "run's XLA estimate falls with size) and its 80 %% band against %(near_pct).0f %%, and the "
               "post's own ratio against it."),
    "beats": N_("The first must be faster than the second (ratio > 1). Test: this run's ratio and its 80 %% "
                "band against 1, and the post's own ratio against 1."),
    "decision": N_("A speed claim holds where this run's number satisfies the rule and the post's own "
                   "numbers do not fail it; differs where this run's whole 80 %% band fails it (or this "
                   "run's number and the post's both do); and is inconclusive otherwise: the band neither "
                   "confirms nor excludes the claim, or the post's numbers fail what this run supports. The "
                   "post's numbers, read off its figures to about %(reading_pct).0f %% of each axis, fail or "
                   "support a claim only by more than that reading error; within it they decide nothing. A "
                   "measurement has no band here."),
}
RULE_VALUES = dict(about=ABOUT, about_factor=math.exp(ABOUT), near_pct=100 * NEAR,
                   reading_pct=100 * READING_ERROR)
REASONS = {
    "feasible_same": N_("Compiles up to %(ok)s and fails from %(fail)s at the default %(limit)s MiB limit, "
                        "as in the post."),
    "feasible_differs": N_("Compiles up to %(ok)s and fails from %(fail)s at the default %(limit)s MiB "
                           "limit; the post: up to %(post_ok)s."),
    # no size of those both tried fails: nothing to say "fails from"
    "feasible_same_all": N_("Compiles at every size up to %(ok)s at the default %(limit)s MiB limit, as in "
                            "the post."),
    "feasible_differs_all": N_("Compiles at every size up to %(ok)s at the default %(limit)s MiB limit; the "
                               "post: up to %(post_ok)s."),
    "about": N_("%(ours).1f TFLOP/s at %(size)s (80 %% band %(lo).1f to %(hi).1f) against the claimed "
                "%(claimed)s, whose \"about\" spans %(low).1f to %(high).1f; the post's own %(post).1f."),
    "about_measured": N_("%(ours).1f TFLOP/s at %(size)s, measured, against the claimed %(claimed)s, whose "
                         "\"about\" spans %(low).1f to %(high).1f; the post's own %(post).1f."),
    "best": N_("At %(size)s this run's claimed %(claimed)s reaches %(claimed_tflops).1f TFLOP/s and its "
               "fastest other blocks, %(rival)s, %(rival_tflops).1f: a ratio of %(ratio).2f (80 %% band "
               "%(ratio_lo).2f to %(ratio_hi).2f); the post: %(claimed)s %(post_claimed_tflops).1f against "
               "its fastest other, %(post_rival)s, %(post_rival_tflops).1f."),
    "best_measured": N_("At %(size)s the measured %(claimed)s reaches %(claimed_tflops).1f TFLOP/s and the "
                        "fastest other measured blocks, %(rival)s, %(rival_tflops).1f (ratio %(ratio).2f); "
                        "the post: %(claimed)s %(post_claimed_tflops).1f against its fastest other, "
                        "%(post_rival)s, %(post_rival_tflops).1f."),
    "near": N_("%(ours).1f TFLOP/s at %(size)s, %(pct).0f %% of XLA's %(xla).1f (%(xla_is)s; 80 %% band "
               "%(pct_lo).0f to %(pct_hi).0f %%); the post: %(post_pct).0f %%."),
    "near_measured": N_("%(ours).1f TFLOP/s at %(size)s, %(pct).0f %% of XLA's %(xla).1f, both measured; "
                        "the post: %(post_pct).0f %%."),
    "beats": N_("With (%(blocks)s) blocks at %(size)s: bfloat16 %(bf16).1f against float32 %(f32).1f "
                "TFLOP/s, a ratio of %(ratio).2f (80 %% band %(ratio_lo).2f to %(ratio_hi).2f); the post: "
                "%(post_bf16).1f against %(post_f32).1f."),
    "beats_measured": N_("With (%(blocks)s) blocks at %(size)s, measured: bfloat16 %(bf16).1f against "
                         "float32 %(f32).1f TFLOP/s (ratio %(ratio).2f); the post: %(post_bf16).1f against "
                         "%(post_f32).1f."),
    "missing": N_("This run has none of the numbers this claim needs (the values column says which)."),
}
XLA_IS = {"modelled": N_("modelled the same way"), "measured": N_("both measured"),
          "post": N_("the post's measured XLA: this run's XLA estimate at that size falls with size "
                     "(flagged), and its envelope value is not used for the claim")}
# Where a claim's numbers come from, after the class of those numbers (analysis/number_classes.py):
# source_text joins the two, so the class word follows the kind of evidence, never a copy of it.
SOURCES = {
    "compile": N_("libtpu %(libtpu)s compile for %(target)s, default VMEM limit"),
    "model": N_("libtpu %(libtpu)s's cycles for %(target)s through the timing model, timed as the post "
                "did with the buffers the post's compiler gave each configuration, fitted without this "
                "figure (leave one experiment out)"),
    "measured": N_("%(target)s, run %(label)s, blocked calls as the post timed them"),
    "none": N_("none"),
}
SOURCE_CLASSES = {"compile": number_class("estimate"), "model": number_class("estimate", through_model=True),
                  "measured": number_class("measured")}
SOURCE_LINE = N_("%(class)s: %(how)s")
NOTES = {
    "holds": N_("Holds: this run's number satisfies the rule (%(test)s), and so do the post's own."),
    "holds_reading": N_("Holds: this run's number satisfies the rule (%(test)s); the post's own numbers are "
                        "within their reading error (±%(post_error_pct).1f %%) of it, so they neither "
                        "support nor fail the claim."),
    "differs_band": N_("Differs: this run's whole 80 %% band (x/%(band_factor).2f) fails the rule "
                       "(%(test)s)."),
    "differs_both": N_("Differs: this run's number fails the rule (%(test)s), and so do the post's own."),
    "differs_measured": N_("Differs: the measurement fails the rule (%(test)s)."),
    "inconclusive_band": N_("Inconclusive: this run's number fails the rule (%(test)s), but its 80 %% band "
                            "(x/%(band_factor).2f) reaches the other side: it neither confirms nor excludes "
                            "the claim."),
    "reading": N_("The post's own numbers are within their reading error (±%(post_error_pct).1f %%) of the "
                  "rule's threshold: they neither support nor fail the claim."),
    "inconclusive_post": N_("Inconclusive: this run's number satisfies the rule (%(test)s), but the post's "
                            "own numbers fail it by more than their reading error."),
    "limits": N_("Scoped VMEM limit each compared configuration was compiled at: %(limits)s (the default is "
                 "%(default)s MiB; * marks a raised limit)."),
}
TESTS = {"model_vs_claim": N_("the timing model against the claimed number, out of sample"),
         "model_vs_model": N_("two numbers of the timing model against each other, out of sample"),
         "model_vs_post": N_("the timing model against the post's measured XLA"),
         "measured_vs_claim": N_("this run's measurement against the claimed number"),
         "measured_vs_measured": N_("two measurements of this run against each other"),
         "compiler_vs_post": N_("the compiler's VMEM verdict against the post's"),
         "measured_vs_post": N_("this run's measured status against the post's")}
VERDICTS = ("holds", "differs", "inconclusive", "not tested")
EXACT = ("margin", "band", "post_margin", "post_error")  # values a verdict is recomputed from (verdict_of)


def decided(margin: float, band: float, post_margin: float = 1.0, post_error: float = 0.0) -> tuple[str, str]:
    """(verdict, note id) of a speed claim holding by `margin` (ln) with the band's half-width `band`
    (0 for a measurement), the post's own margin and its reading error (all ln)."""
    post_fails, post_unsure = post_margin < -post_error, abs(post_margin) < post_error
    if margin + band < 0:
        return "differs", "differs_measured" if band == 0 else "differs_band"
    if margin < 0:
        return ("differs", "differs_both") if post_fails else ("inconclusive", "inconclusive_band")
    if post_fails:
        return "inconclusive", "inconclusive_post"
    return "holds", "holds_reading" if post_unsure else "holds"


def reading_error(df: pd.DataFrame, experiment: str, value: float) -> float:
    """The ln half-width of a value read off the post's figure of `experiment` (READING_ERROR of its axis)."""
    shown = df[(df.source == "published") & (df.target == TARGET) & (df.experiment == experiment)].tflops
    return READING_ERROR * AXIS_MARGINS * float(shown.max()) / value if shown.notna().any() else 0.0


def verdict_of(row) -> str:
    """The verdict a claims.csv row's own numbers give under its kind's rule (what a test recomputes)."""
    values = json.loads(row["values"]) if isinstance(row["values"], str) else row["values"]
    if row["reason_id"] == "missing":
        return "not tested"
    if row["kind"] == "compiles":
        return "holds" if values["ok"] == values["post_ok"] and values["fail"] == values["post_fail"] \
            else "differs"
    return decided(values["margin"], values["band"], values["post_margin"], values.get("post_error", 0.0))[0]


def _rows(df, experiment, dtype, kernel, blocks=None):
    rows = df[(df.target == TARGET) & (df.experiment == experiment) & (df.dtype == dtype)
              & (df.kernel == kernel)]
    return _blocks(post_configs(default_limit(rows)), blocks)


def _blocks(hit: pd.DataFrame, blocks) -> pd.DataFrame:
    if blocks is None:
        return hit
    return hit[(hit.bm == blocks[0]) & (hit.bk == blocks[1]) & (hit.bn == blocks[2])]


class Evidence:
    """The speeds a claim is decided on, timed as the post did: this run's measurements where it made
    them, else the model's prediction by the refit that left its figure out, with its 80 % band."""

    def __init__(self, df: pd.DataFrame, model):
        measured = df[(df.source == "measured") & (df.target == TARGET) & (df.status == "ok")]
        self.measured = measured.dropna(subset=["wall_seconds"])
        self.predicted, self.libtpu, self.band = None, None, None
        est = df[(df.source == "estimate") & (df.target == TARGET)]
        if len(est):
            versions = est.libtpu_version.dropna()
            self.libtpu = str(versions.iloc[0]) if len(versions) else "?"
        points, _ = tm.reference_points(df) if "est_cycles" in df else (pd.DataFrame(), {})
        if len(points) and model is not None:
            self.predicted = model.held_out(points)
        if self.predicted is not None:
            self.band = model.band

    def _measured(self, dtype, kernel, size, blocks=None) -> pd.DataFrame:
        m = self.measured
        return _blocks(m[(m.kernel == kernel) & (m.dtype == dtype) & (m.m == size)], blocks)

    def _modelled(self, experiment, dtype, kernel, size, blocks=None) -> pd.DataFrame:
        if self.predicted is None:
            return pd.DataFrame()
        p = self.predicted
        return _blocks(p[(p.experiment == experiment) & (p.kernel == kernel) & (p.dtype == dtype)
                         & (p.m == size)], blocks)

    def covered(self, configs) -> bool:
        """True where this run measured every configuration of `configs`: decided on measurements."""
        return len(self.measured) > 0 and all(len(self._measured(*c[2:])) for c in configs)

    def halfwidth(self, size) -> float:
        return self.band.for_size(size, size, size)[LEVEL] if self.band is not None else np.nan

    def get(self, experiment, dtype, kernel, size, blocks=None, *, measured: bool) -> float | None:
        """TFLOP/s of one configuration from the measurement (`measured`) or the model."""
        work = float(flops(size, size, size))
        hit = (self._measured(dtype, kernel, size, blocks) if measured
               else self._modelled(experiment, dtype, kernel, size, blocks))
        if not len(hit):
            return None
        seconds = hit.wall_seconds if measured else hit.model_post_seconds
        return tflops(work, float(seconds.iloc[0]))

    def source(self, measured: bool) -> tuple[str, dict]:
        """(kind, values) of where a claim's speeds come from (SOURCES)."""
        if measured:
            label = self.measured.sort_values("timestamp").run_label.iloc[-1]
            return "measured", dict(target=TARGET, label=label)
        return "model", dict(libtpu=self.libtpu, target=TARGET)

    def limits(self, configs) -> dict:
        """The limits note's values for the configurations a modelled claim compares."""
        default = chip(TARGET).default_vmem_limit_bytes // MiB
        out = []
        for label, *where in configs:  # the limit each configuration's estimate was compiled at
            hit = self._modelled(*where)
            limits = hit.vmem_limit_bytes.dropna() if len(hit) else []
            mib = int(limits.iloc[0]) // MiB if len(limits) else None
            raised = "*" if mib is not None and mib > default else ""
            out.append(f"{label} {mib if mib is not None else '?'} MiB{raised}")
        return dict(limits="; ".join(out), default=default)


def _published(df, experiment, dtype, kernel, size, blocks=None) -> float | None:
    rows = _rows(df[df.source == "published"], experiment, dtype, kernel, blocks)
    hit = rows[(rows.m == size) & (rows.status == "ok")].tflops.dropna()
    return float(hit.iloc[0]) if len(hit) else None


def _compiles(df, evidence, claim: Claim):
    """Largest size that compiles and the first that fails, this run (measured where it measured every
    size the post reports, else the compiler's verdict) against the post."""
    where = (claim.experiment, claim.dtype, claim.kernel, claim.blocks)
    post = _rows(df[df.source == "published"], *where).sort_values("m")
    measured = _rows(df[df.source == "measured"], *where)
    covers = len(post) > 0 and set(post.m) <= set(measured.m)
    source = "measured" if covers else "estimate"
    ours = _rows(df[df.source == source], *where).sort_values("m")
    if ours.empty or post.empty:
        return _missing("compile results for this configuration" if ours.empty else "published numbers")
    ours = ours.drop_duplicates("m")
    sizes = set(ours.m) & set(post.m)  # decided on the sizes both tried
    if not sizes:
        return _missing("compile results at a size the post reports")
    ours, post = ours[ours.m.isin(sizes)], post[post.m.isin(sizes)]
    post_ok = post[post.status == "ok"].m.max()
    ok = ours[ours.status == "ok"].m.max()
    failed = ours[ours.status != "ok"]
    fail = failed.m.min() if len(failed) else None
    post_fail = post[post.status != "ok"].m.min()
    limit = ours.vmem_limit_bytes.dropna()
    limit = int(limit.iloc[0] // MiB) if len(limit) else "?"
    same = _int(ok) == _int(post_ok) and _int(fail) == _int(post_fail)  # "–": no size fails
    values = dict(ok=_int(ok), fail=_int(fail) if fail is not None else "–", limit=limit,
                  post_ok=_int(post_ok), post_fail=_int(post_fail),
                  test="compiler_vs_post" if source == "estimate" else "measured_vs_post")
    versions = ours.libtpu_version.dropna()
    label = ours.run_label.dropna()
    if source == "estimate":
        where = ("compile", dict(libtpu=versions.iloc[0] if len(versions) else "?", target=TARGET))
    else:
        where = ("measured", dict(target=TARGET, label=label.iloc[0] if len(label) else "?"))
    return dict(post_value=f"ok up to {_int(post_ok)}, fails from {_int(post_fail)}",
                this_value=f"ok up to {_int(ok)}, fails from {values['fail']}", source=where,
                verdict="holds" if same else "differs",
                reason_id="feasible_same" if same else "feasible_differs",
                values=values)


def _int(x):
    return "–" if x is None or pd.isna(x) else int(x)


def _missing(what):
    return dict(post_value="", this_value="", source=("none", {}), verdict="not tested", reason_id="missing",
                values=dict(what=what))


def _speed_claim(evidence, configs, measured, margin, band, post_margin, test, reason, values, post_error=0.0,
                 **extra):
    """The row of a speed claim: its verdict by `decided`, the note saying how, and every number."""
    verdict, note = decided(margin, band, post_margin, post_error)
    values = dict(values, margin=float(margin), band=float(band), post_margin=float(post_margin),
                  post_error=float(post_error), post_error_pct=100 * float(np.expm1(post_error)),
                  band_factor=float(np.exp(band)), test=test, **RULE_VALUES)
    notes = [note]
    if note == "inconclusive_band" and abs(post_margin) < post_error:
        notes.append("reading")
    if not measured:
        values.update(evidence.limits(configs))
        notes.append("limits")
    return dict(source=evidence.source(measured), verdict=verdict,
                reason_id=reason + ("_measured" if measured and f"{reason}_measured" in REASONS else ""),
                note_id=" ".join(notes), values=values, **extra)


def _about(df, evidence, claim: Claim):
    experiment, dtype, kernel, blocks, size, claimed = (claim.experiment, claim.dtype, claim.kernel,
                                                        claim.blocks, claim.size, claim.claimed)
    configs = [(blocks_text(*blocks), experiment, dtype, kernel, size, blocks)]
    measured = evidence.covered(configs)
    post = _published(df, experiment, dtype, kernel, size, blocks)
    ours = evidence.get(experiment, dtype, kernel, size, blocks, measured=measured)
    if post is None or ours is None:
        return _missing(f"TFLOP/s for {experiment}'s {blocks[0]}-blocks at {size}")
    q = 0.0 if measured else evidence.halfwidth(size)
    margin, post_margin = ABOUT - abs(np.log(ours / claimed)), ABOUT - abs(np.log(post / claimed))
    test = "measured_vs_claim" if measured else "model_vs_claim"
    return _speed_claim(
        evidence, configs, measured, margin, q, post_margin, test, "about",
        dict(ours=ours, size=size, post=post, claimed=f"{claimed:g}", lo=ours * np.exp(-q),
             hi=ours * np.exp(q), low=claimed * np.exp(-ABOUT), high=claimed * np.exp(ABOUT)),
        post_error=reading_error(df, experiment, post),
        post_value=f"{post:.1f} TFLOP/s", this_value=f"{ours:.1f} TFLOP/s")


def published_blocks(df, experiment, dtype, kernel, size) -> list[tuple[int, int, int]]:
    """The blocks the post published a speed for, for one experiment at one size, smallest first."""
    rows = _rows(df[df.source == "published"], experiment, dtype, kernel)
    rows = rows[(rows.m == size) & (rows.status == "ok") & rows.tflops.notna() & rows.bm.notna()]
    return sorted({(int(r.bm), int(r.bk), int(r.bn)) for r in rows.itertuples()})


def _best(df, evidence, claim: Claim):
    experiment, dtype, kernel, size = claim.experiment, claim.dtype, claim.kernel, claim.size
    claimed = claim.blocks
    candidates = published_blocks(df, experiment, dtype, kernel, size)
    configs = [(blocks_text(*b), experiment, dtype, kernel, size, b) for b in candidates]
    post = {b: _published(df, experiment, dtype, kernel, size, b) for b in candidates}
    measured = evidence.covered(configs)
    ours = {b: evidence.get(experiment, dtype, kernel, size, b, measured=measured) for b in candidates}
    ours = {b: v for b, v in ours.items() if v is not None}
    rivals = [b for b in ours if b != claimed]
    if claimed not in ours or claimed not in post or not rivals or len(post) < 2:
        return _missing(f"{experiment} TFLOP/s of {blocks_text(*claimed)} and other blocks at {size}, "
                        "here and in the post")
    rival = max(rivals, key=ours.get)  # the claimed blocks against the fastest other ones
    post_best = max(post, key=post.get)
    post_rival = max((b for b in post if b != claimed), key=post.get)
    q = 0.0 if measured else evidence.halfwidth(size)  # one figure: both from one refit
    ratio = ours[claimed] / ours[rival]
    best = max(ours, key=ours.get)
    return _speed_claim(
        evidence, [c for c in configs if c[-1] in (claimed, rival)], measured, float(np.log(ratio)), q,
        float(np.log(post[claimed] / post[post_rival])),
        "measured_vs_measured" if measured else "model_vs_model", "best",
        dict(size=size, claimed=blocks_text(*claimed), claimed_tflops=ours[claimed],
             rival=blocks_text(*rival), rival_tflops=ours[rival], ratio=ratio, ratio_lo=ratio * np.exp(-q),
             ratio_hi=ratio * np.exp(q),
             post_rival=blocks_text(*post_rival), post_rival_tflops=post[post_rival],
             post_claimed_tflops=post[claimed]),
        post_error=float(np.hypot(reading_error(df, experiment, post[claimed]),
                                  reading_error(df, experiment, post[post_rival]))),
        post_value=f"{blocks_text(*post_best)}: {post[post_best]:.1f} TFLOP/s",
        this_value=f"{blocks_text(*best)}: {ours[best]:.1f} TFLOP/s")


def _near(df, evidence, claim: Claim):
    experiment, dtype, kernel, size = claim.experiment, claim.dtype, claim.kernel, claim.size
    blocks = claim.blocks
    kernel_config = (f"{kernel} {blocks_text(*blocks)}", experiment, dtype, kernel, size, blocks)
    xla_config = ("XLA", experiment, dtype, "xla", size, None)
    post = _published(df, experiment, dtype, kernel, size, blocks)
    post_xla = _published(df, experiment, dtype, "xla", size)
    measured = evidence.covered([kernel_config, xla_config])
    ours = evidence.get(experiment, dtype, kernel, size, blocks, measured=measured)
    if post is None or post_xla is None or ours is None:
        return _missing(f"{kernel} and XLA TFLOP/s at {size}")
    xla_est = df[(df.source == "estimate") & (df.target == TARGET) & ~is_pallas(df.kernel)
                 & (df.dtype == dtype) & (df.m == size)]
    flagged = "estimate_nonmonotonic" in xla_est and bool(xla_est.estimate_nonmonotonic.eq(True).any())
    own_xla = evidence.get(experiment, dtype, "xla", size, measured=measured)
    q = 0.0 if measured else evidence.halfwidth(size)
    if measured:
        xla, xla_is, test, compared = own_xla, "measured", "measured_vs_measured", [kernel_config, xla_config]
    elif flagged or own_xla is None:  # the post's measured XLA: like for like with a post-method estimate
        xla, xla_is, test, compared = post_xla, "post", "model_vs_post", [kernel_config]
    else:  # both modelled, from one refit: the ratio's band is one half-width
        xla, xla_is, test, compared = own_xla, "modelled", "model_vs_model", [kernel_config, xla_config]
    frac = ours / xla
    margin, post_margin = float(np.log(frac / NEAR)), float(np.log(post / post_xla / NEAR))
    return _speed_claim(
        evidence, compared, measured, margin, q, post_margin, test, "near",
        dict(ours=ours, size=size, pct=100 * frac, xla=xla, xla_is=xla_is, pct_lo=100 * frac * np.exp(-q),
             pct_hi=100 * frac * np.exp(q), post=post, post_xla=post_xla, post_pct=100 * post / post_xla),
        post_error=float(np.hypot(reading_error(df, experiment, post),
                                  reading_error(df, experiment, post_xla))),
        post_value=f"{post:.1f} vs XLA {post_xla:.1f} TFLOP/s ({100 * post / post_xla:.0f} %)",
        this_value=f"{ours:.1f} vs XLA {xla:.1f} TFLOP/s ({100 * frac:.0f} %)")


def _beats(df, evidence, claim: Claim):
    """The claim's configuration (the values' bf16) against `versus` (f32) with the same blocks."""
    blocks, size, label = claim.blocks, claim.size, blocks_text(*claim.blocks)
    first = (claim.experiment, claim.dtype, claim.kernel)
    experiment, kernel, dtype = claim.versus
    second = (experiment, dtype, kernel)
    configs = [(f"{first[1]} {label}", *first, size, blocks), (f"{dtype} {label}", *second, size, blocks)]
    measured = evidence.covered(configs)
    post_b, post_f = (_published(df, *first, size, blocks), _published(df, *second, size, blocks))
    ours_b, ours_f = (evidence.get(*first, size, blocks, measured=measured),
                      evidence.get(*second, size, blocks, measured=measured))
    if None in (post_b, post_f, ours_b, ours_f):
        return _missing(f"{first[1]} and {dtype} TFLOP/s with {label} blocks at {size}")
    # two figures, two refits: their errors add as independent ones
    q = 0.0 if measured else float(np.hypot(evidence.halfwidth(size), evidence.halfwidth(size)))
    ratio = ours_b / ours_f
    return _speed_claim(
        evidence, configs, measured, float(np.log(ratio)), q, float(np.log(post_b / post_f)),
        "measured_vs_measured" if measured else "model_vs_model", "beats",
        dict(blocks=", ".join(str(b) for b in blocks), size=size, bf16=ours_b, f32=ours_f, ratio=ratio,
             ratio_lo=ratio * np.exp(-q), ratio_hi=ratio * np.exp(q), post_bf16=post_b, post_f32=post_f),
        post_error=float(np.hypot(reading_error(df, first[0], post_b),
                                  reading_error(df, experiment, post_f))),
        post_value=f"bf16 {post_b:.1f} vs f32 {post_f:.1f} TFLOP/s",
        this_value=f"bf16 {ours_b:.1f} vs f32 {ours_f:.1f} TFLOP/s")


# The check of each kind of claim: (table, Evidence or None, Claim) -> the parts of its row.
CHECKS = {"compiles": _compiles, "about": _about, "best": _best, "near": _near, "beats": _beats}


def source_text(kind: str, values: dict, gettext=lambda m: m) -> str:
    """claims.csv's source column: the class of the claim's numbers, then how they were obtained."""
    how = gettext(SOURCES[kind]) % values
    if kind not in SOURCE_CLASSES:
        return how
    return gettext(SOURCE_LINE) % {"class": gettext(CLASS_NAMES[SOURCE_CLASSES[kind]]), "how": how}


def reason_text(reason_id: str, note_id: str, values: dict, gettext=lambda m: m) -> str:
    """The reason sentence, and the notes on how the verdict was decided (space-separated ids)."""
    values = dict(values)
    for key, words in (("test", TESTS), ("xla_is", XLA_IS)):  # ids in the row, words in the sentence
        message = words.get(values.get(key))
        if message is not None:
            values[key] = gettext(message)
    if "limits" in values:  # joined with "; " in claims.csv; shown with the language's own semicolon
        values["limits"] = str(values["limits"]).replace("; ", gettext("; "))
    if reason_id in ("feasible_same", "feasible_differs") and values.get("fail") == "–":
        reason_id += "_all"
    parts = [gettext(REASONS[reason_id]) % values]
    parts += [gettext(NOTES[n]) % values for n in (note_id or "").split() if n in NOTES]
    text = parts[0]
    for part in parts[1:]:  # Chinese runs on after its full stop; English leaves a space
        text += ("" if text.endswith("。") else " ") + part
    return text


def rule_text(kind: str, gettext=lambda m: m) -> str:
    """The rule of a kind of claim, with its thresholds (the report's appendix, docs/verdicts.md)."""
    return gettext(RULES[kind]) % RULE_VALUES


def feasibility_claims() -> tuple[str, ...]:
    """Claims about what compiles: all a toolchain without cycle estimates can check."""
    return tuple(c.id for c in REGISTRY if c.kind == "compiles")


def claims_table(df: pd.DataFrame, model, toolchain: str = TOOLCHAIN, only=None) -> pd.DataFrame:
    """One row per claim (REGISTRY, or the ids `only`), checked against `toolchain`'s rows, each
    target's latest measured run and `model` (a FittedModel; None for claims about what compiles)."""
    df = latest_runs(df)
    checked = [c for c in REGISTRY if only is None or c.id in only]
    evidence = Evidence(df, model) if any(c.kind != "compiles" for c in checked) else None
    rows = []
    for claim in checked:
        r = CHECKS[claim.kind](df, evidence, claim)
        kind, where = r["source"]
        # the numbers a verdict is decided on stay exact, so that verdict_of(row) is the row's verdict
        values = {k: (round(float(v), 4) if isinstance(v, (float, np.floating)) and k not in EXACT else v)
                  for k, v in {**r["values"], **where}.items()}
        note = r.get("note_id", "")
        rows.append(dict(claim_id=claim.id, claim=claim.wording, kind=claim.kind, post_value=r["post_value"],
                         this_value=r["this_value"], source=source_text(kind, values), source_kind=kind,
                         toolchain=toolchain, verdict=r["verdict"],
                         reason=reason_text(r["reason_id"], note, values), reason_id=r["reason_id"],
                         note_id=note, values=json.dumps(values, sort_keys=True, default=str)))
    return pd.DataFrame(rows)
