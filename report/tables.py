"""Small tables for the report, built from the tidy table (cells are strings, ready to print)."""
import numpy as np
import pandas as pd

from tpu_matmul_repro.analysis.summaries import default_limit
from tpu_matmul_repro.analysis.views import experiment_rows
from tpu_matmul_repro.experiments.core.i18n import N_
from tpu_matmul_repro.experiments.core.schema import CONFIG
from tpu_matmul_repro.experiments.core.units import MiB, flops, tflops
from tpu_matmul_repro.figures.plots import config_label


def flagged_row(row) -> bool:
    """An estimate flagged as falling with size (analysis.views.flagged): no number is shown for it."""
    flag = getattr(row, "estimate_nonmonotonic", False)
    return row.source == "estimate" and pd.notna(flag) and bool(flag)


def cell(est, pub, gettext) -> dict:
    """The estimate for one configuration and size, and the post's number if it published one (shown
    under it, so no cell stacks parentheses)."""
    if est is None:
        text = "–"
    elif flagged_row(est):  # not drawn in the figure either
        text = gettext("flagged")
    elif est.status == "ok" and pd.notna(est.tflops):
        text = f"{est.tflops:.1f}"
    elif est.status == "vmem_oom":
        text = gettext("out of VMEM: %(mib).1f MiB") % {"mib": est.vmem_bytes / MiB}
    else:
        text = est.status
    published = None
    if pub is not None:
        published = f"{pub.tflops:.1f}" if pub.status == "ok" and pd.notna(pub.tflops) else gettext("failed")
    return {"est": text, "pub": published}


def experiment_table(df: pd.DataFrame, experiment: str, dtype: str, target: str, gettext) -> dict:
    """Rows: the post's configurations; columns: sizes; cells: estimated (published) TFLOP/s."""
    rows = default_limit(df[(df.experiment == experiment) & (df.dtype == dtype) & (df.target == target)])
    # the column the figure beside it draws (analysis/views.py:experiment_rows): one estimator per view
    rows, modelled = experiment_rows(rows)
    est = rows[rows.source == "estimate"]
    pub = rows[rows.source == "published"]
    sizes = sorted(set(rows.m))
    labels = {}
    # the configurations estimated or published: measured rows (any number of runs) add no row here
    for r in pd.concat([est, pub]).itertuples():
        labels.setdefault(config_label(r), (r.kernel != "xla", r.kernel,
                                            *(0 if pd.isna(v) else v for v in (r.bm, r.bk, r.bn))))
    # (label, size) -> the first such row, read in one pass (a search per cell walked the table 480 times)
    found = {}
    for name, part in (("est", est), ("pub", pub)):
        for r in part.itertuples():
            found.setdefault((name, config_label(r), r.m), r)
    body = []
    for label in sorted(labels, key=labels.get):
        cells = [cell(found.get(("est", label, s)), found.get(("pub", label, s)), gettext) for s in sizes]
        body.append({"label": label, "cells": cells})
    return {"sizes": sizes, "rows": body, "published": not pub.empty, "modelled": modelled}


# Release dates of the pinned jax a toolchain installs (PyPI), printed beside the post's date: the post's
# era's toolchain is the oldest pip installs, released after the post.
JAX_RELEASED = {"0.4.36": "2024-12-05"}


def provenance(df: pd.DataFrame, measured: pd.DataFrame | None = None) -> list[dict]:
    """One line per (source, toolchain, target): how many rows, from which device or compiler versions;
    `measured`: every measured row, for the count."""
    counts = measured.groupby("target").size() if measured is not None else None
    out = []
    df = df.assign(toolchain=df.toolchain.fillna("")) if "toolchain" in df else df.assign(toolchain="")
    for (source, toolchain, target), group in df.groupby(["source", "toolchain", "target"], sort=False):
        first = group.iloc[0]
        rows = len(group)
        if source == "measured" and counts is not None:
            rows = int(counts.get(target, rows))
        jax = first.jax_version if pd.notna(first.jax_version) else ""
        out.append(dict(source=source, toolchain=toolchain, target=target, rows=rows,
                        released=JAX_RELEASED.get(jax, ""),
                        device_kind=first.device_kind if pd.notna(first.device_kind) else "",
                        jax=jax,
                        libtpu=first.libtpu_version if pd.notna(first.libtpu_version) else "",
                        git_sha=first.git_sha if pd.notna(first.git_sha) else ""))
    return out


def timer_mark(r) -> str:
    """ * : timed by the batched calls, not the profiler; ‡ : and within twice the dispatch floor."""
    if getattr(r, "timer", "") == "profiler_device_events":
        return ""
    near = getattr(r, "near_dispatch_floor", None)
    return " *‡" if pd.notna(near) and bool(near) else " *"


# Bounds on the measurements section, so that its size follows the configurations, not the runs: a
# target measured in more runs than PER_RUN_TABLES gets one table summarising them, and no table lists
# more than MAX_TABLE_ROWS configurations (the rest are counted under it; all are in the table's file).
PER_RUN_TABLES = 4
MAX_TABLE_ROWS = 100
ROW_ORDER = ["kernel", "dtype", "bm", "bk", "bn", "vmem_limit_bytes", "m"]


def measured_row(r) -> dict:
    """One configuration's cells: its status, TFLOP/s (interquartile range), blocked-call TFLOP/s, ..."""
    ok = r.status == "ok" and pd.notna(r.seconds)
    flop = float(flops(r.m, r.k, r.n))
    return dict(
        kernel=r.kernel, config=config_label(r), dtype=r.dtype, m=r.m, status=r.status,
        limit_mib=f"{r.vmem_limit_bytes / MiB:.0f}" if pd.notna(r.vmem_limit_bytes) else "–",
        tflops=f"{r.tflops:.2f} ({tflops(flop, r.p75_seconds):.2f}–{tflops(flop, r.p25_seconds):.2f})"
        + timer_mark(r) if ok else "–",
        precision=getattr(r, "precision", "") or "–",
        wall_tflops=f"{tflops(flop, r.wall_seconds):.2f}" if ok else "–",
        n=int(r.n_samples) if ok else 0,
        ratio=f"{r.measured_over_estimate:.2f}" if pd.notna(r.measured_over_estimate) else "–",
    )


def run_facts(first) -> dict:
    """What a table's caption says of the run its (latest) row comes from."""
    return dict(target=first.target, label=first.run_label, device_kind=first.device_kind,
                chips=int(first.num_chips) if pd.notna(first.num_chips) else 1,
                devices=int(first.num_devices) if pd.notna(first.get("num_devices")) else "?",
                floor=(f"{first.dispatch_floor_s * 1e6:.1f}"
                       if pd.notna(first.get("dispatch_floor_s")) else "?"),
                jax=first.jax_version, timestamp=first.timestamp)


def run_table(run: pd.DataFrame) -> dict:
    """One run's configurations, at most MAX_TABLE_ROWS of them."""
    ordered = run.sort_values(ROW_ORDER)
    return dict(run_facts(run.iloc[0]), summary=False, more=max(0, len(ordered) - MAX_TABLE_ROWS),
                rows=[measured_row(r) for r in ordered.head(MAX_TABLE_ROWS).itertuples()])


def summary_table(group: pd.DataFrame) -> dict:
    """A target measured in many runs: each configuration's latest run, the number of its runs and the
    median over its ok runs of their median times (as TFLOP/s); at most MAX_TABLE_ROWS configurations."""
    latest = group.sort_values("timestamp", kind="stable").drop_duplicates(CONFIG, keep="last")
    runs = group.groupby(CONFIG, dropna=False).size().rename("runs").reset_index()
    ok = group[(group.status == "ok") & group.seconds.notna()]
    median = ok.groupby(CONFIG, dropna=False).seconds.median().rename("median_seconds").reset_index()
    latest = latest.merge(runs, on=CONFIG, how="left").merge(median, on=CONFIG, how="left")
    ordered = latest.sort_values(ROW_ORDER)
    body = []
    for r in ordered.head(MAX_TABLE_ROWS).itertuples():
        flop = float(flops(r.m, r.k, r.n))
        body.append(dict(measured_row(r), runs=int(r.runs), run=r.run_label,
                         median_tflops=f"{tflops(flop, r.median_seconds):.2f}" if pd.notna(r.median_seconds)
                         else "–"))
    newest = group.sort_values("timestamp", kind="stable").iloc[-1]
    return dict(run_facts(newest), summary=True, runs=group.run_label.nunique(),
                first=group.timestamp.min(), last=group.timestamp.max(),
                more=max(0, len(ordered) - MAX_TABLE_ROWS), rows=body)


def measured_tables(measured: pd.DataFrame) -> dict:
    """The measurements section from every measured row of the post's configurations: a table per run,
    or one (summary_table) past PER_RUN_TABLES runs; `summarised` says whether it shows less."""
    rows = measured[~measured.search.eq(True)].drop_duplicates(["run_label", *CONFIG])
    tables = []
    for _, group in rows.groupby("target", sort=True):
        if group.run_label.nunique() <= PER_RUN_TABLES:
            tables += [run_table(run) for _, run in group.groupby("run_label", sort=True)]
        else:
            tables.append(summary_table(group))
    runs = measured.drop_duplicates(["target", "run_label"])
    return dict(tables=tables, rows=f"{len(measured):,}", runs=f"{len(runs):,}", per_run=PER_RUN_TABLES,
                max_rows=MAX_TABLE_ROWS, summarised=any(t["summary"] or t["more"] for t in tables))


TOOLCHAIN_NAMES = {"current": N_("today's compiler"), "mid2026": N_("the mid-2026 compiler"),
                   "post": N_("the post's compiler")}


def toolchain_name(name: str, gettext, *, standalone: bool = False) -> str:
    """A toolchain in words ("today's compiler", "the post's compiler", ...), else by its name."""
    if name in TOOLCHAIN_NAMES:
        return gettext(TOOLCHAIN_NAMES[name])
    return gettext("toolchain %(name)s") % {"name": name} if standalone else name


VERDICT_NAMES = {"holds": N_("holds"), "differs": N_("differs"), "inconclusive": N_("inconclusive"),
                 "not tested": N_("not tested")}
ESTIMATOR_NAMES = {
    ("compiler", "none (libtpu's estimate)"): N_("libtpu's estimate (device time)"),
    ("model", "in-sample (fitted on every point)"): N_("timing model, in-sample"),
    ("model", "leave one experiment out"): N_("timing model, leave one experiment out"),
    ("model", "leave one size out"): N_("timing model, leave one size out"),
}
LEFT_OUT_NAMES = {
    "published run failed": N_("the post's run failed"),
    "no ok estimate of this configuration": N_("no estimate of this configuration compiled"),
    "scored, not fitted: XLA estimate flagged non-monotonic":
        N_("scored but not fitted: XLA's estimate falls with size (flagged)"),
}
CONSTANT_NAMES = {
    "profile_scale": N_("scale of libtpu's static profile (compute per step)"),
    "bandwidth_fraction": N_("fraction of the HBM bandwidth the DMAs reach"),
    "step_cycles": N_("fixed cost per grid step (cycles)"),
    "dma_cycles": N_("fixed cost per DMA issued (cycles)"),
    "float32_cycles_per_kib": N_("cost per KiB of float32 operand blocks, overlapped by the DMAs (cycles)"),
    "call_seconds": N_("host overhead per blocked call (microseconds)"),
    "float32_factor": N_("float32 dot time relative to one bfloat16 MXU pass"),
    "overlapped_step_cycles": N_("the core's own cost per grid step, overlapped by the DMAs (cycles)"),
}
def best_vs_xla_rows(best: list[dict]) -> list[dict]:
    """The best-vs-XLA table's rows, and after a float32 row with XLA at precision HIGHEST, a row of the
    same best blocks against it (no post columns: the post published no HIGHEST number)."""
    rows = []
    for r in best:
        rows.append(dict(r, versus="DEFAULT", precision=r["dtype"]))
        highest = r.get("xla_highest_tflops", np.nan)
        if highest is not None and pd.notna(highest):
            rows.append(dict(r, versus="HIGHEST", precision=f"{r['dtype']} HIGHEST", xla_tflops=highest,
                             xla_flagged=bool(r.get("xla_highest_flagged", False)),
                             fraction_of_xla=r.get("fraction_of_xla_highest", np.nan),
                             best_post_method_tflops=np.nan, post_xla_tflops=np.nan,
                             fraction_of_post_xla=np.nan))
    return rows
SIZE_BAND_NAMES = {"below 4096": N_("below 4096"), "4096 to 8191": N_("4096 to 8191"),
                   "8192 and above": N_("8192 and above")}


def _text(value) -> str:
    """A text cell of a CSV read back: "" where it was empty (pandas reads it as NaN)."""
    return value if isinstance(value, str) else ""


def _claims_rows(claims: pd.DataFrame, gettext) -> list[dict]:
    import json

    from tpu_matmul_repro.analysis.claims import reason_text, registry, source_text

    rows, claims_by_id = [], registry()
    for r in claims.itertuples():
        values = json.loads(r.values)
        rows.append(dict(claim=gettext(claims_by_id[r.claim_id].wording),
                         verdict=gettext(VERDICT_NAMES[r.verdict]), verdict_class=r.verdict.replace(" ", "-"),
                         reason=reason_text(r.reason_id, _text(getattr(r, "note_id", "")), values, gettext),
                         source=source_text(r.source_kind, values, gettext),
                         toolchain=toolchain_name(r.toolchain, gettext), tested=r.reason_id != "missing"))
    return rows


def _fidelity_rows(fidelity: pd.DataFrame, gettext) -> list[dict]:
    from tpu_matmul_repro.analysis.validation import headline

    rows = []
    for key, h in headline(fidelity).items():
        worst = max(h["per_experiment"], key=h["per_experiment"].get)
        rows.append(dict(estimator=gettext(ESTIMATOR_NAMES.get(key, key[0])), n=h["n"], all=f"{h['all']:.3f}",
                         n_large=h["n_large"], large=f"{h['large']:.3f}",
                         spearman=f"{h['spearman']:.3f}" if pd.notna(h["spearman"]) else "–",
                         worst=f"{worst} {h['per_experiment'][worst]:.3f}",
                         per_experiment=", ".join(f"{e} {v:.2f}" for e, v in h["per_experiment"].items())))
    return rows


def fit_name(fit: str, gettext) -> str:
    """A fit's name (analysis/fitted_model.py) in words."""
    from tpu_matmul_repro.analysis.fitted_model import PUBLISHED, WITHOUT, is_refit

    if fit == PUBLISHED:
        return gettext("the post's v5e numbers")
    if is_refit(fit):
        return gettext("the post's v5e numbers without figure %(figure)s") % {"figure": fit.split(WITHOUT)[1]}
    parts = str(fit).split(" ", 2)
    if len(parts) == 3 and parts[0] == "measured":
        return gettext("measured on %(target)s, run %(label)s") % {"target": parts[1], "label": parts[2]}
    return str(fit)


def _shown(constant: str) -> tuple[float, int]:
    """(scale, digits) a constant is printed with: call_seconds in microseconds, cycles whole."""
    scale = 1e6 if constant == "call_seconds" else 1.0
    return scale, 0 if constant in ("step_cycles", "call_seconds", "overlapped_step_cycles") else 2


def refit_rows(constants: pd.DataFrame, gettext) -> dict:
    """The leave-one-experiment-out refits' constants side by side ({"figures", "rows"})."""
    from tpu_matmul_repro.analysis.fitted_model import WITHOUT, is_refit

    refits = constants[constants.fit.map(is_refit)] if len(constants) else constants
    if refits.empty:
        return {}
    figures = list(dict.fromkeys(refits.fit))
    rows = []
    for name, part in refits.groupby("constant", sort=False):
        scale, digits = _shown(name)
        by_fit = part.set_index("fit").value
        rows.append(dict(constant=gettext(CONSTANT_NAMES[name]), name=name,
                         values=[f"{by_fit[f] * scale:.{digits}f}" for f in figures]))
    return dict(figures=[f.split(WITHOUT)[1] for f in figures], rows=rows)


def _constant_rows(constants: pd.DataFrame, gettext) -> list[dict]:
    from tpu_matmul_repro.analysis.fitted_model import is_refit

    rows = []
    for r in constants.itertuples():
        if is_refit(r.fit):  # refit_rows: side by side
            continue
        scale, digits = _shown(r.constant)
        rows.append(dict(fit=fit_name(r.fit, gettext), constant=gettext(CONSTANT_NAMES[r.constant]),
                         name=r.constant,
                         value=f"{r.value * scale:.{digits}f}", error=f"{r.std_error * scale:.{digits}f}",
                         range=f"{r.lower * scale:g} – {r.upper * scale:g}", at_bound=bool(r.at_bound),
                         n=int(r.n_points)))
    return rows


def band_rows(fidelity: pd.DataFrame, gettext) -> list[dict]:
    """The prediction bands beside their held-out coverage (fidelity.csv, leave one experiment out):
    one row per size band, then all points and sizes from 2048 and 8192, as checked."""
    from tpu_matmul_repro.analysis.intervals import VALIDATION

    need = {"validation", "scope", "group", "halfwidth80", "coverage80", "halfwidth95", "coverage95"}
    if not need <= set(fidelity):
        return []
    rows = fidelity[fidelity.validation == VALIDATION]
    scopes = [("size band", g, gettext(SIZE_BAND_NAMES.get(g, g))) for g in SIZE_BAND_NAMES] + [
        ("all", "all", gettext("all points")), ("size >= 2048", "all", gettext("sizes from 2048")),
        ("size", "8192", gettext("size 8192"))]
    out = []
    for scope, group, name in scopes:
        hit = rows[(rows.scope == scope) & (rows.group == group)]
        if hit.empty or not hit.n.iloc[0] or pd.isna(hit.coverage80.iloc[0]):
            continue
        r = hit.iloc[0]
        out.append(dict(name=name, n=int(r.n), band=scope == "size band",
                        factor80=f"x/{np.exp(r.halfwidth80):.2f}", coverage80=f"{r.coverage80:.2f}",
                        factor95=f"x/{np.exp(r.halfwidth95):.2f}" if np.isfinite(r.halfwidth95) else "∞",
                        coverage95=f"{r.coverage95:.2f}"))
    return out


def rule_rows(gettext) -> list[dict]:
    """The verdict rules, one per kind of claim, with their thresholds (the report's appendix)."""
    from tpu_matmul_repro.analysis.claims import KIND_NAMES, REGISTRY, rule_text

    rows = [dict(kind=gettext(KIND_NAMES[kind]), rule=rule_text(kind, gettext),
                 claims=[gettext(c.wording) for c in REGISTRY if c.kind == kind])
            for kind in KIND_NAMES]
    return rows + [dict(kind=gettext("Speed claims"), rule=rule_text("decision", gettext), claims=[])]


def timing_model_section(gettext, *, claims=None, fidelity=None, constants=None,
                         ablation=None, more_claims=()) -> dict:
    """The claims checked, the timing model's constants and its fidelity from the run's claims.csv,
    fidelity.csv and timing_model.csv (not given: none); `more_claims`: the studies', after the core's."""
    claims, fidelity, constants = (pd.DataFrame() if t is None else t for t in (claims, fidelity, constants))
    more_claims = [c for c in more_claims if c is not None and len(c)]
    if more_claims:
        claims = pd.concat([claims, *more_claims], ignore_index=True)
    left_out = fidelity.left_out.iloc[0] if len(fidelity) and "left_out" in fidelity else ""
    reasons = []
    for part in ("" if pd.isna(left_out) else str(left_out)).split("; "):
        if part:
            reason, count = part.rsplit(": ", 1)
            name = gettext(LEFT_OUT_NAMES[reason]) if reason in LEFT_OUT_NAMES else reason
            reasons.append(gettext("%(reason)s: %(count)s") % {"reason": name, "count": count})
    notes = []
    if "note" in fidelity and "estimator" in fidelity:  # a run too small to fit has a note only
        for (estimator, validation_name), part in fidelity.groupby(["estimator", "validation"], sort=False):
            if part.note.fillna("").str.startswith("not validated").any():
                name = gettext(ESTIMATOR_NAMES.get((estimator, validation_name), validation_name))
                notes.append(gettext("Not cross-validated (%(validation)s): a fold leaves too few points to "
                                     "fit the model.") % {"validation": name})
    return dict(notes=notes, claims=_claims_rows(claims, gettext) if len(claims) else [],
                bands=band_rows(fidelity, gettext) if len(fidelity) else [], rules=rule_rows(gettext),
                claims_table=claims, fidelity_table=fidelity, constants_table=constants,
                fidelity=_fidelity_rows(fidelity, gettext) if "estimator" in fidelity else [],
                constants=_constant_rows(constants, gettext) if len(constants) else [],
                refits=refit_rows(constants, gettext),
                ablation=ablation_rows(ablation, gettext) if ablation is not None and "loeo all" in ablation
                else [],
                left_out=gettext("; ").join(reasons))


def ablation_rows(ablation: pd.DataFrame, gettext) -> list[dict]:
    """results/model_ablation.csv as the report prints it: each variant's held-out medians and verdict."""
    verdicts = {True: gettext("yes"), False: gettext("no")}
    return [dict(variant=r["variant"], change=r["change"],
                 scores=["–" if pd.isna(r[f"loeo {s}"]) else f"{r[f'loeo {s}']:.3f}"
                         for s in ("all", "size >= 2048", "size 8192")],
                 earns=verdicts.get(r["earns_place"], "–") if r["change"] != "default" else "–",
                 note="" if pd.isna(r.get("note", np.nan)) else r["note"])
            for r in ablation.to_dict("records")]
