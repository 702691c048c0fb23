"""Every claim of the post, checked against this run's table: results/claims.csv.

One row per claim: the post's value, this run's value and its source, a verdict (holds / differs /
inconclusive / not tested) and the reason in one sentence, plus a note (note_id) on how the verdict
was decided. Where the claim is about whether a configuration compiles,
this run's value is the compiler's own VMEM verdict at the default limit (or a measurement's status).
Where it is about speed, it is a measurement when the run has one (blocked-call TFLOP/s, the post's
method), else the timing model timed as the post did, predicted by a fit that left the claim's figure
out (leave one experiment out: the post's own number for it never entered that fit).

A modelled speed carries the timing model's 80 % prediction interval (split conformal over the
leave-one-experiment-out errors, experiments/analysis/intervals.py): a claim holds where it holds over
the whole interval, differs where it fails over the whole interval, and is inconclusive where the
difference lies inside it; the ratio of two modelled speeds gets the same half-width in ln. The note
states the scoped-VMEM limit each compared configuration needed to compile. Measurements have no
interval here: holds or differs.

Reason texts are templates (English; locale/ has their translations) filled from `values`.
"""
import json

import numpy as np
import pandas as pd

from tpu_matmul_repro.experiments.analysis import intervals, validation
from tpu_matmul_repro.experiments.analysis import timing_model as tm
from tpu_matmul_repro.experiments.analysis.runs import latest_runs
from tpu_matmul_repro.experiments.analysis.summaries import default_limit, post_configs
from tpu_matmul_repro.experiments.core.chips import POST_CHIP, chip
from tpu_matmul_repro.experiments.core.i18n import N_
from tpu_matmul_repro.experiments.core.units import MiB, flops, tflops

TARGET = POST_CHIP
ABOUT = 0.2  # "about" a number: within |ln(ours / post's)| <= 0.2 (about 20 %)
NEAR = 0.9  # "nearly matches": at least 90 % of XLA's TFLOP/s
LEVEL = 0.8  # the prediction interval a modelled speed's verdict is decided with
TOOLCHAIN = "current"  # the libtpu of this run (another helper may add older toolchains)


CLAIMS = {
    "v1_fails_above_1024": N_("v1 (whole arrays in VMEM) fails above 1024"),
    "v2_up_to_2048": N_("v2 (N = 4 split grid) handles sizes up to 2048"),
    "v3_128_about_10": N_("v3 with 128-blocks reaches about 10 TFLOP/s"),
    "v4_best_512": N_("v4's best float32 blocks are (512, 512, 512)"),
    "v5_matches_xla": N_("v5 with (512, 1024, 1024) blocks nearly matches XLA (bfloat16, 8192)"),
    "bf16_beats_f32": N_("bfloat16 (v5) beats float32 (v4) with the same blocks"),
    "v5_1024_fails_from_2048": N_("(1024, 1024, 1024) blocks in bfloat16 fail from 2048"),
}
REASONS = {
    "feasible_same": N_("Compiles up to %(ok)s and fails from %(fail)s at the default %(limit)s MiB limit, "
                        "as in the post."),
    "feasible_differs": N_("Compiles up to %(ok)s and fails from %(fail)s at the default %(limit)s MiB "
                           "limit; the post: up to %(post_ok)s."),
    "speed_about": N_("%(ours).1f TFLOP/s at %(size)s against the post's %(post).1f (%(pct).0f %% of it)."),
    "best_blocks": N_("Among the post's float32 blocks at %(size)s the fastest is %(ours)s at "
                      "%(ours_tflops).1f TFLOP/s; the post's %(post)s: %(post_tflops).1f."),
    "vs_xla": N_("%(ours).1f TFLOP/s at %(size)s, %(pct).0f %% of the post's measured XLA (%(xla).1f); "
                 "this run's own XLA estimate at that size is not used: it falls with size (flagged)."),
    "vs_xla_measured": N_("%(ours).1f TFLOP/s at %(size)s, %(pct).0f %% of XLA's %(xla).1f, "
                          "both measured in this run."),
    "vs_xla_modelled": N_("%(ours).1f TFLOP/s at %(size)s, %(pct).0f %% of XLA's %(xla).1f, "
                          "both modelled the same way in this run."),
    "bf16_vs_f32": N_("With (%(blocks)s) blocks at %(size)s: bfloat16 %(bf16).1f against float32 %(f32).1f "
                      "TFLOP/s; the post: %(post_bf16).1f against %(post_f32).1f."),
    "missing": N_("This run has none of the numbers this claim needs (the values column says which)."),
}
SOURCES = {
    "compile": N_("estimated: libtpu %(libtpu)s compile for %(target)s, default VMEM limit"),
    "model": N_("estimated: libtpu %(libtpu)s for %(target)s through the timing model, timed as the post "
                "did, fitted without this figure (leave one experiment out)"),
    "measured": N_("measured: %(target)s, run %(label)s, blocked calls as the post timed them"),
    "none": N_("none"),
}
NOTES = {
    "band_outside": N_("Decided with the timing model's 80 %% prediction interval (x/%(band_factor).2f, "
                       "leave one experiment out): the difference lies outside it. Scoped VMEM limit "
                       "each compared configuration was compiled at: %(limits)s (the default is "
                       "%(default)s MiB; * marks a raised limit)."),
    "band_inside": N_("Inconclusive: the difference lies inside the timing model's 80 %% prediction "
                      "interval (x/%(band_factor).2f, leave one experiment out). Scoped VMEM limit each "
                      "compared configuration was compiled at: %(limits)s (the default is %(default)s "
                      "MiB; * marks a raised limit)."),
}
VERDICTS = ("holds", "differs", "inconclusive", "not tested")


def decided(margin: float, band: float) -> str:
    """holds where the claim holds over the whole interval (margin: ln of by how much it holds at the
    point estimate), differs where it fails over all of it, inconclusive in between."""
    if margin > band:
        return "holds"
    if margin < -band:
        return "differs"
    return "inconclusive"


def _rows(df, experiment, dtype, kernel, blocks=None):
    rows = df[(df.target == TARGET) & (df.experiment == experiment) & (df.dtype == dtype)
              & (df.kernel == kernel)]
    rows = post_configs(default_limit(rows))
    if blocks is not None:
        rows = rows[(rows.bm == blocks[0]) & (rows.bk == blocks[1]) & (rows.bn == blocks[2])]
    return rows


class Speeds:
    """TFLOP/s of a configuration timed as the post did: measured if measured, else modelled out of sample."""

    def __init__(self, df: pd.DataFrame):
        self.df = df
        measured = df[(df.source == "measured") & (df.target == TARGET) & (df.status == "ok")]
        self.measured = measured.dropna(subset=["wall_seconds"])
        self.predicted, self.libtpu = None, None
        est = df[(df.source == "estimate") & (df.target == TARGET)]
        if len(est):
            versions = est.libtpu_version.dropna()
            self.libtpu = str(versions.iloc[0]) if len(versions) else "?"
        self.halfwidth = None  # ln half-width of the modelled speeds' interval (LEVEL)
        points, _ = tm.reference_points(df) if "est_cycles" in df else (pd.DataFrame(), {})
        if len(points):
            try:
                self.predicted = validation.cross_validate(points, "experiment")
            except tm.TooFewPoints:
                self.predicted = None
        if self.predicted is not None:
            errors = np.abs(np.log(self.predicted.model_post_seconds / self.predicted.ref_seconds))
            self.halfwidth = intervals.conformal_quantile(errors, LEVEL)

    def band(self) -> float:
        """The ln half-width a verdict is decided with: 0 for measurements (no interval here)."""
        return 0.0 if len(self.measured) else self.halfwidth

    def _hit(self, experiment, dtype, kernel, size, blocks=None) -> pd.DataFrame:
        if len(self.measured):
            hit = self.measured[(self.measured.kernel == kernel) & (self.measured.dtype == dtype)
                                & (self.measured.m == size)]
        elif self.predicted is None:
            return pd.DataFrame()
        else:
            p = self.predicted
            hit = p[(p.experiment == experiment) & (p.kernel == kernel) & (p.dtype == dtype) & (p.m == size)]
        if blocks is not None:
            hit = hit[(hit.bm == blocks[0]) & (hit.bk == blocks[1]) & (hit.bn == blocks[2])]
        return hit

    def limit_mib(self, experiment, dtype, kernel, size, blocks=None) -> int | None:
        """The scoped-VMEM limit (MiB) the configuration's speed was obtained at."""
        hit = self._hit(experiment, dtype, kernel, size, blocks)
        limits = hit.vmem_limit_bytes.dropna() if len(hit) else []
        return int(limits.iloc[0]) // MiB if len(limits) else None

    def source(self) -> tuple[str, dict]:
        """(kind, values) of where this run's speeds come from (SOURCES)."""
        if len(self.measured):
            label = self.measured.sort_values("timestamp").run_label.iloc[-1]
            return "measured", dict(target=TARGET, label=label)
        return "model", dict(libtpu=self.libtpu, target=TARGET)

    def tflops(self, experiment, dtype, kernel, size, blocks=None) -> float | None:
        work = float(flops(size, size, size))
        hit = self._hit(experiment, dtype, kernel, size, blocks)
        if not len(hit):
            return None
        seconds = hit.wall_seconds if len(self.measured) else hit.model_post_seconds
        return tflops(work, float(seconds.iloc[0]))

    def decide(self, margin: float, compared) -> tuple[str, str, dict]:
        """(verdict, note id, note values) of a claim holding by `margin` (ln) at the point estimate;
        `compared`: (label, experiment, dtype, kernel, size, blocks) of each configuration it compares."""
        band = self.band()
        if not band:  # measured: no interval
            return ("holds" if margin > 0 else "differs"), "", {}
        verdict = decided(margin, band)
        default = chip(TARGET).default_vmem_limit_bytes // MiB
        limits = []
        for label, *where in compared:
            mib = self.limit_mib(*where)
            raised = "*" if mib is not None and mib > default else ""
            limits.append(f"{label} {mib if mib is not None else '?'} MiB{raised}")
        note = "band_inside" if verdict == "inconclusive" else "band_outside"
        return verdict, note, dict(band=band, band_factor=float(np.exp(band)), margin=float(margin),
                                   limits="; ".join(limits), default=default)


def _published(df, experiment, dtype, kernel, size, blocks=None) -> float | None:
    rows = _rows(df[df.source == "published"], experiment, dtype, kernel, blocks)
    hit = rows[(rows.m == size) & (rows.status == "ok")].tflops.dropna()
    return float(hit.iloc[0]) if len(hit) else None


def _feasibility(df, claim, experiment, dtype, kernel, blocks=None):
    """Largest size that compiles and the first that fails, this run against the post."""
    source = "measured" if ((df.source == "measured") & (df.target == TARGET)).any() else "estimate"
    ours = _rows(df[df.source == source], experiment, dtype, kernel, blocks).sort_values("m")
    post = _rows(df[df.source == "published"], experiment, dtype, kernel, blocks).sort_values("m")
    if ours.empty or post.empty:
        what = "compile results for this configuration" if ours.empty else "published numbers"
        return _missing(claim, what)
    ours = ours.drop_duplicates("m")
    post_ok = post[post.status == "ok"].m.max()
    ok = ours[ours.status == "ok"].m.max()
    failed = ours[ours.status != "ok"]
    fail = failed.m.min() if len(failed) else None
    post_fail = post[post.status != "ok"].m.min()
    limit = ours.vmem_limit_bytes.dropna()
    limit = int(limit.iloc[0] // MiB) if len(limit) else "?"
    same = ok == post_ok and fail == post_fail
    values = dict(ok=_int(ok), fail=_int(fail) if fail is not None else "–", limit=limit,
                  post_ok=_int(post_ok))
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


def _missing(claim, what):
    return dict(post_value="", this_value="", source=("none", {}), verdict="not tested", reason_id="missing",
                values=dict(what=what))


def _v3_about_10(df, speeds, claim, size=8192):
    post = _published(df, "v3", "float32", "v3", size, (128, 128, 128))
    ours = speeds.tflops("v3", "float32", "v3", size, (128, 128, 128))
    if post is None or ours is None:
        return _missing(claim, "TFLOP/s for v3's 128-blocks at 8192")
    verdict, note, noted = speeds.decide(ABOUT - abs(np.log(ours / 10.0)),
                                         [("(128, 128, 128)", "v3", "float32", "v3", size, (128, 128, 128))])
    return dict(post_value=f"{post:.1f} TFLOP/s", this_value=f"{ours:.1f} TFLOP/s", source=speeds.source(),
                verdict=verdict, reason_id="speed_about", note_id=note,
                values=dict(ours=ours, size=size, post=post, pct=100 * ours / post, **noted))


POST_V4 = [(128, 128, 128), (256, 256, 256), (512, 512, 512), (512, 1024, 1024), (1024, 1024, 1024)]


def _v4_best(df, speeds, claim, size=8192):
    ours = {b: speeds.tflops("v4", "float32", "v3", size, b) for b in POST_V4}
    post = {b: _published(df, "v4", "float32", "v3", size, b) for b in POST_V4}
    ours = {b: v for b, v in ours.items() if v is not None}
    post = {b: v for b, v in post.items() if v is not None}
    if not ours or not post:
        return _missing(claim, "v4 TFLOP/s at 8192")
    best, post_best = max(ours, key=ours.get), max(post, key=post.get)
    fmt = lambda b: f"({b[0]}, {b[1]}, {b[2]})"  # noqa: E731
    claimed = (512, 512, 512)
    if claimed not in ours:
        return _missing(claim, "v4 TFLOP/s of (512, 512, 512) at 8192")
    # the claimed blocks against the fastest other ones: > 0 where the claimed blocks are the fastest
    rival = max((b for b in ours if b != claimed), key=ours.get, default=None)
    if rival is None:
        return _missing(claim, "v4 TFLOP/s of blocks other than (512, 512, 512) at 8192")
    verdict, note, noted = speeds.decide(
        float(np.log(ours[claimed] / ours[rival])),
        [(fmt(b), "v4", "float32", "v3", size, b) for b in (claimed, rival)])
    return dict(post_value=f"{fmt(post_best)}: {post[post_best]:.1f} TFLOP/s",
                this_value=f"{fmt(best)}: {ours[best]:.1f} TFLOP/s", source=speeds.source(),
                verdict=verdict, reason_id="best_blocks", note_id=note,
                values=dict(size=size, ours=fmt(best), ours_tflops=ours[best], post=fmt(post_best),
                            post_tflops=post[post_best], **noted))


def _v5_vs_xla(df, speeds, claim, size=8192):
    blocks = (512, 1024, 1024)
    post = _published(df, "v5", "bfloat16", "v5", size, blocks)
    post_xla = _published(df, "v5", "bfloat16", "xla", size)
    ours = speeds.tflops("v5", "bfloat16", "v5", size, blocks)
    if post is None or post_xla is None or ours is None:
        return _missing(claim, "v5 and XLA TFLOP/s at 8192")
    xla_est = df[(df.source == "estimate") & (df.target == TARGET) & (df.kernel == "xla")
                 & (df.dtype == "bfloat16") & (df.m == size)]
    flagged = "estimate_nonmonotonic" in xla_est and bool(xla_est.estimate_nonmonotonic.eq(True).any())
    own_xla = speeds.tflops("v5", "bfloat16", "xla", size)
    if len(speeds.measured) and own_xla is not None:  # a measurement of XLA: compare with it
        xla, reason, extra = own_xla, "vs_xla_measured", {}
    else:  # the post's measured XLA: the like-for-like reference for a post-method estimate
        xla, reason, extra = post_xla, "vs_xla", {}
        if not flagged and own_xla is not None:
            xla, reason, extra = own_xla, "vs_xla_measured", {}
    frac = ours / xla
    compared = [("v5 (512, 1024, 1024)", "v5", "bfloat16", "v5", size, blocks)]
    if reason == "vs_xla_measured" and not len(speeds.measured):  # this run's own XLA, modelled
        compared.append(("XLA", "v5", "bfloat16", "xla", size, None))
    verdict, note, noted = speeds.decide(float(np.log(frac / NEAR)), compared)
    return dict(post_value=f"{post:.1f} vs XLA {post_xla:.1f} TFLOP/s ({100 * post / post_xla:.0f} %)",
                this_value=f"{ours:.1f} vs XLA {xla:.1f} TFLOP/s ({100 * frac:.0f} %)",
                source=speeds.source(),
                verdict=verdict, reason_id=reason, note_id=note,
                values=dict(ours=ours, size=size, pct=100 * frac, xla=xla, **extra, **noted))


def _bf16_beats_f32(df, speeds, claim, size=8192, blocks=(512, 512, 512)):
    post_b, post_f = (_published(df, "v5", "bfloat16", "v5", size, blocks),
                      _published(df, "v4", "float32", "v3", size, blocks))
    ours_b, ours_f = (speeds.tflops("v5", "bfloat16", "v5", size, blocks),
                      speeds.tflops("v4", "float32", "v3", size, blocks))
    if None in (post_b, post_f, ours_b, ours_f):
        return _missing(claim, "bfloat16 and float32 TFLOP/s with (512, 512, 512) blocks at 8192")
    label = f"({', '.join(str(b) for b in blocks)})"
    verdict, note, noted = speeds.decide(float(np.log(ours_b / ours_f)),
                                         [(f"bfloat16 {label}", "v5", "bfloat16", "v5", size, blocks),
                                          (f"float32 {label}", "v4", "float32", "v3", size, blocks)])
    return dict(post_value=f"bf16 {post_b:.1f} vs f32 {post_f:.1f} TFLOP/s",
                this_value=f"bf16 {ours_b:.1f} vs f32 {ours_f:.1f} TFLOP/s", source=speeds.source(),
                verdict=verdict, reason_id="bf16_vs_f32", note_id=note,
                values=dict(blocks=", ".join(str(b) for b in blocks), size=size, bf16=ours_b, f32=ours_f,
                            post_bf16=post_b, post_f32=post_f, **noted))


def reason_text(reason_id: str, note_id: str, values: dict, gettext=lambda m: m) -> str:
    """The reason sentence, and the note on how the verdict was decided where there is one."""
    text = gettext(REASONS[reason_id]) % values
    if not note_id:
        return text
    if "limits" in values:  # joined with "; " in claims.csv; shown with the language's own semicolon
        values = dict(values, limits=str(values["limits"]).replace("; ", gettext("; ")))
    # Chinese runs on after its full stop; English leaves a space
    return text + ("" if text.endswith("。") else " ") + gettext(NOTES[note_id]) % values


# Claims about which configurations compile: the only ones a toolchain without cycle estimates (the
# post's libtpu 0.0.5) can check.
FEASIBILITY_CLAIMS = ("v1_fails_above_1024", "v2_up_to_2048", "v5_1024_fails_from_2048")


def claims_table(df: pd.DataFrame, toolchain: str = TOOLCHAIN, only=None) -> pd.DataFrame:
    """One row per claim of the post (CLAIMS), checked against the table's estimates of `toolchain`
    (the caller passes that toolchain's rows); `only`: the claim ids to check (default: all).
    Measurements: each target's latest run, the one the figures draw and the claims name."""
    df = latest_runs(df)
    speeds = Speeds(df) if only is None or set(only) - set(FEASIBILITY_CLAIMS) else None
    checks = {
        "v1_fails_above_1024": lambda c: _feasibility(df, c, "v1", "float32", "v1"),
        "v2_up_to_2048": lambda c: _feasibility(df, c, "v2", "float32", "v2"),
        "v3_128_about_10": lambda c: _v3_about_10(df, speeds, c),
        "v4_best_512": lambda c: _v4_best(df, speeds, c),
        "v5_matches_xla": lambda c: _v5_vs_xla(df, speeds, c),
        "bf16_beats_f32": lambda c: _bf16_beats_f32(df, speeds, c),
        "v5_1024_fails_from_2048": lambda c: _feasibility(df, c, "v5", "bfloat16", "v5", (1024, 1024, 1024)),
    }
    rows = []
    for claim, check in checks.items():
        if only is not None and claim not in only:
            continue
        r = check(claim)
        kind, where = r["source"]
        values = {k: (round(float(v), 4) if isinstance(v, (float, np.floating)) else v)
                  for k, v in {**r["values"], **where}.items()}
        note = r.get("note_id", "")
        rows.append(dict(claim_id=claim, claim=CLAIMS[claim], post_value=r["post_value"],
                         this_value=r["this_value"], source=SOURCES[kind] % values, source_kind=kind,
                         toolchain=toolchain, verdict=r["verdict"],
                         reason=reason_text(r["reason_id"], note, values), reason_id=r["reason_id"],
                         note_id=note,
                         values=json.dumps(values, sort_keys=True, default=str)))
    return pd.DataFrame(rows)
