"""Which inputs carry the timing model: each variant (an input taken out, or one added) fitted and
scored out of sample, and whether it earns its place (docs/timing-model.md, "Which inputs carry
the prediction"). Run as a module it prints and writes the table."""
import dataclasses
from collections.abc import Callable

import numpy as np
import pandas as pd

from tpu_matmul_repro.analysis import timing_model as tm
from tpu_matmul_repro.analysis import validation
from tpu_matmul_repro.kernels import is_pallas

# A median |ln| difference smaller than this (half a per cent) is within the reading error of the
# post's figures (about 2 % of an axis) and the fit's own noise: it does not decide.
MARGIN = 0.005
SCOPES = {"all": None, "size >= 2048": 2048, "size 8192": 8192}
DEFAULT = "the model"
# The accuracy the model aims at: held-out median |ln| per scope, and the share of the post's points
# inside their 80 % band (every scope).
ERROR_GOALS = {"all": 0.033, "size 8192": 0.06}
COVERAGE_GOAL = (0.75, 0.90)


def _no_xla_cycles(points: pd.DataFrame) -> pd.DataFrame:
    xla = ~is_pallas(points.kernel)
    return points.assign(est_cycles=points.est_cycles.where(~xla, 0.0),
                         model_cycles=points.model_cycles.where(~xla, np.nan))


def _no_request(points: pd.DataFrame) -> pd.DataFrame:
    return points.assign(model_vmem_bytes=np.nan, vmem_bytes=np.nan)


def _todays_request(points: pd.DataFrame) -> pd.DataFrame:
    return points.assign(model_vmem_bytes=np.nan)


def _same(points: pd.DataFrame) -> pd.DataFrame:
    return points


@dataclasses.dataclass(frozen=True)
class Variant:
    name: str
    model_input: str  # the input this variant concerns
    change: str  # "default", "without" (an input of the model taken out) or "with" (one added)
    fixed: tuple = ()  # (constant, value) pairs held fixed
    extra: tuple = ()  # (constant, (lower, upper, start)) pairs fitted beyond the model's
    points: Callable = _same
    needs_pallas_cycles: bool = False


PALLAS_CYCLES = "libtpu's static-profile cycles of the Pallas kernels"
VARIANTS = (
    Variant(DEFAULT, "", "default"),
    Variant("with Pallas cycles, profile_scale in [0.1, 2]", PALLAS_CYCLES, "with",
            extra=((tm.PROFILE_SCALE, (0.1, 2.0, (0.1, 0.5, 1.0))),), needs_pallas_cycles=True),
    Variant("with Pallas cycles, profile_scale in [0, 2]", PALLAS_CYCLES, "with",
            extra=((tm.PROFILE_SCALE, (0.0, 2.0, (0.0, 0.5, 1.0))),), needs_pallas_cycles=True),
    Variant("with Pallas cycles trusted, profile_scale in [0.9, 1.1]", PALLAS_CYCLES, "with",
            extra=((tm.PROFILE_SCALE, (0.9, 1.1, (1.0,))),), needs_pallas_cycles=True),
    Variant("with bandwidth_fraction, fitted in [0.05, 1]",
            "bandwidth_fraction (DMAs below the HBM bandwidth)", "with",
            extra=((tm.BANDWIDTH_FRACTION, tm.EXTRA[tm.BANDWIDTH_FRACTION]),)),
    Variant("with accumulator_cycles_per_kib, fitted in [0, 20]",
            "accumulator_cycles_per_kib (the k axis's accumulator read and written in VMEM per step)", "with",
            extra=((tm.ACCUMULATOR, tm.EXTRA[tm.ACCUMULATOR]),)),
    Variant("with step_cycles, fitted in [0, 2000]", "step_cycles (a cost per grid step, not overlapped)",
            "with", extra=((tm.STEP, tm.EXTRA[tm.STEP]),)),
    Variant("with step_cycles instead of dma_cycles", "step_cycles (a cost per grid step, not overlapped)",
            "with", fixed=(("dma_cycles", 0.0),), extra=((tm.STEP, tm.EXTRA[tm.STEP]),)),
    Variant("with dma_latency_cycles, fitted in [0, 2000]",
            "dma_latency_cycles (a latency per DMA inside the copies)", "with",
            extra=((tm.DMA_LATENCY, tm.EXTRA[tm.DMA_LATENCY]),)),
    Variant("with mxu_fill_rows, fitted in [0, 1024]",
            "mxu_fill_rows (the dot's cost per block row: weight loads of the MXU)", "with",
            extra=((tm.MXU_FILL, tm.EXTRA[tm.MXU_FILL]),)),
    Variant("without XLA's cost-model cycles", "XLA's cost-model cycles", "without", points=_no_xla_cycles),
    Variant("without the VMEM request (every block double-buffered)",
            "the compiler's VMEM request (buffering)", "without", points=_no_request),
    Variant("without the post's toolchain's request (today's request for the post's points)",
            "the post's toolchain's VMEM request for the post's points", "without", points=_todays_request),
    Variant("without dma_cycles", "dma_cycles (a cost per DMA issued, not overlapped)", "without",
            fixed=(("dma_cycles", 0.0),)),
    Variant("without overlapped_step_cycles", "overlapped_step_cycles (per-step cost, overlapped)", "without",
            fixed=(("overlapped_step_cycles", 0.0),)),
    Variant("without call_seconds", "call_seconds (dispatch of one blocked call)", "without",
            fixed=(("call_seconds", 0.0),)),
    Variant("without float32_cycles_per_kib (0)", "float32_cycles_per_kib (float32 operands' cost per KiB)",
            "without", fixed=(("float32_cycles_per_kib", 0.0),)),
    Variant("with float32_factor, fitted in [1, 6]", "float32_factor (a float32 dot in bfloat16 MXU passes)",
            "with", extra=((tm.FLOAT32_FACTOR, tm.EXTRA[tm.FLOAT32_FACTOR]),)),
)


def _fit_of(variant: Variant):
    def fit(points):
        return tm.fit_published(points, fixed=dict(variant.fixed), extra=dict(variant.extra))
    return fit


def score(points: pd.DataFrame, variant: Variant, with_coverage: bool = True) -> dict:
    """One variant's held-out medians per scope and figure, in-sample rms and, with `with_coverage`,
    the nested coverage of its 80 % band per scope (twenty refits more)."""
    points = variant.points(points)
    fit = _fit_of(variant)
    full = fit(points)
    predicted = validation.cross_validate(points, "experiment", fit).model_post_seconds
    error = np.abs(np.log(predicted / points.ref_seconds))
    row = {}
    for scope, size in SCOPES.items():
        mine = error if size is None else error[points.m >= size] if size < 8192 else error[points.m == size]
        row[f"loeo {scope}"] = float(mine.median())
        row[f"n {scope}"] = int(mine.notna().sum())
    for figure in sorted(points.experiment.unique()):
        row[f"loeo {figure}"] = float(error[points.experiment == figure].median())
    inside = validation.interval_checks(points, predicted, fit=fit) if with_coverage else None
    for scope, size in SCOPES.items():
        mine = points.m >= 0 if size is None else points.m >= size if size < 8192 else points.m == size
        row[f"coverage80 {scope}"] = (float(inside.coverage80[mine.reindex(inside.index)].mean())
                                      if inside is not None else np.nan)
    row["in-sample rms"] = full.rms_log_error
    fitted = [p for p in (*tm.PARAMS, *dict(variant.extra)) if p not in dict(variant.fixed)]
    row["constants"] = "; ".join(f"{p}={getattr(full.constants, p):.4g}" for p in fitted)
    row["at_bound"] = ", ".join(full.at_bound)
    return row


def pallas_cycles(points: pd.DataFrame) -> tuple[int, int]:
    """(the post's Pallas points with libtpu's cycles, all of them)."""
    pallas = is_pallas(points.kernel)
    return int(points.est_cycles[pallas].notna().sum()), int(pallas.sum())


def ablation_table(points: pd.DataFrame) -> pd.DataFrame:
    """One row per variant: its scores, the change against the model per scope, and earns_place."""
    rows = []
    with_cycles, pallas = pallas_cycles(points)
    for variant in VARIANTS:
        row = dict(variant=variant.name, model_input=variant.model_input, change=variant.change)
        if variant.needs_pallas_cycles and not with_cycles:
            row["note"] = ("not computed: this run made no static-profile compile "
                           "(a toolchain with static_profile: true adds them)")
        else:
            if variant.needs_pallas_cycles:  # a point without cycles gets no profile term (fmax of NaN)
                row["note"] = (f"{with_cycles} of the post's {pallas} Pallas points carry libtpu's cycles "
                               "(larger grids than compile_study.profile_max_steps are not profiled)")
            # coverage for the model and the candidates that could join it; an input taken out leaves
            # the model either way, and its twenty nested refits would double the table's time
            row |= score(points, variant, with_coverage=variant.change != "without")
        rows.append(row)
    table = pd.DataFrame(rows)
    base = table.iloc[0]
    for scope in SCOPES:
        table[f"delta {scope}"] = table[f"loeo {scope}"] - base[f"loeo {scope}"]
    table["earns_place"] = [earns_place(r) for r in table.to_dict("records")]
    return table


def earns_place(row: dict) -> object:
    """For an input of the model: taking it out raises the error at >= 2048 or 8192 by MARGIN. For an
    input outside it: adding it lowers one of them by MARGIN and raises no scope by as much."""
    deltas = {scope: float(row.get(f"delta {scope}", np.nan)) for scope in SCOPES}
    large = [deltas["size >= 2048"], deltas["size 8192"]]
    if row["change"] == "without":
        return bool(np.nanmax(large) >= MARGIN) if not np.all(np.isnan(large)) else pd.NA
    if row["change"] == "with":
        if np.all(np.isnan(large)):
            return pd.NA
        return bool(np.nanmin(large) <= -MARGIN and np.nanmax(list(deltas.values())) < MARGIN)
    return pd.NA


def _cell(value) -> str:
    return "–" if pd.isna(value) else f"{value:.3f}"


def markdown(table: pd.DataFrame) -> str:
    """The ablation as the docs print it, one line per variant."""
    lines = ["| variant | all | ≥ 2048 | 8192 | in-sample rms | coverage80 all | ≥ 2048 | 8192 "
             "| earns its place |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in table.to_dict("records"):
        if pd.isna(r.get("loeo all", np.nan)):
            lines.append(f"| {r['variant']} | – | – | – | – | – | – | – | {r.get('note', '')} |")
            continue
        place = {True: "yes", False: "no"}.get(r["earns_place"], "–") if r["change"] != "default" else "–"
        errors = [_cell(r[f"loeo {scope}"]) for scope in SCOPES]
        cover = [_cell(r.get(f"coverage80 {scope}", np.nan)) for scope in SCOPES]
        cells = " | ".join([*errors, f"{r['in-sample rms']:.3f}", *cover, place])
        lines.append(f"| {r['variant']} | {cells} |")
    return "\n".join(lines)


def targets(table: pd.DataFrame) -> str:
    """The model's row against the goals (GOALS): the sentence the docs print."""
    m = table.iloc[0]
    met = {True: "met", False: "not met"}
    errors = "; ".join(f"{scope} {m[f'loeo {scope}']:.3f} (goal ≤ {goal}: {met[m[f'loeo {scope}'] <= goal]})"
                       for scope, goal in ERROR_GOALS.items())
    lo, hi = COVERAGE_GOAL
    cover = "; ".join(f"{scope} {m[f'coverage80 {scope}']:.2f} ({met[lo <= m[f'coverage80 {scope}'] <= hi]})"
                      for scope in SCOPES)
    return (f"The model out of sample, median |ln(model / post)|: {errors}. Nested coverage of the 80 % "
            f"band (goal {lo:.2f} to {hi:.2f}): {cover}.")


RECORDED = "from the record, not recomputed: a table with libtpu's static-profile cycles, scored "


def keep_recorded(table: pd.DataFrame, record: pd.DataFrame) -> pd.DataFrame:
    """`table` with the rows it could not compute taken from `record` where it holds them, as they were
    made (scored against the record's own model, which the note names)."""
    recorded = record.set_index("variant")
    form = record.iloc[0].get("constants", "")
    rows = []
    for r in table.to_dict("records"):
        if pd.isna(r.get("loeo all", np.nan)) and r["variant"] in recorded.index:
            kept = recorded.loc[r["variant"]].to_dict()
            note = kept["note"] if str(kept.get("note", "")).startswith(RECORDED) else (
                f"{RECORDED}against the model of that record ({form})")
            r = {**r, **{c: kept[c] for c in kept if c in table.columns}, "note": note}
        rows.append(r)
    return pd.DataFrame(rows, columns=table.columns)


# python -m tpu_matmul_repro.analysis.ablation TABLE.parquet [OUT.csv [RECORD.csv]]
if __name__ == "__main__":
    import sys

    from tpu_matmul_repro.analysis.runs import read_results
    from tpu_matmul_repro.analysis.toolchain_rows import primary_rows

    rows = primary_rows(read_results(sys.argv[1]), "current")  # the pipeline's own compiler's estimates
    table = ablation_table(tm.reference_points(rows, source="published")[0])
    if len(sys.argv) > 3:
        table = keep_recorded(table, pd.read_csv(sys.argv[3]))
    if len(sys.argv) > 2:
        from tpu_matmul_repro.experiments.core.atomic_write import write_csv_atomic

        write_csv_atomic(table, sys.argv[2])
    print(markdown(table))
