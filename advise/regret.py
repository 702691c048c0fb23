"""The advisor's ranking checked on the post's own block sweeps (figures 4 and 5): the pick by the
refit without that figure against the post's best, as regret; run as a module on a run's
results/matmul.parquet it prints the table (docs/advisor.md, "The ranking checked against the post")."""
import math
import sys
from pathlib import Path

import pandas as pd

from tpu_matmul_repro.analysis import timing_model as tm
from tpu_matmul_repro.analysis import validation
from tpu_matmul_repro.analysis.fitted_model import FittedModel
from tpu_matmul_repro.experiments.core.chips import POST_CHIP

LEVEL = 0.8


def sweeps(points: pd.DataFrame) -> pd.DataFrame:
    """The points of figures that time several blocks of one kernel at one size."""
    pallas = points[points.kernel != "xla"].dropna(subset=["bm"])
    counts = pallas.groupby(["experiment", "m"]).bm.transform("size")
    return pallas[counts > 1]


def regret(df: pd.DataFrame, model) -> pd.DataFrame:
    """One row per (figure, size) of a block sweep: the model's pick by the refit without that figure,
    the compiler's pick, the post's best, their regrets and the tie set's worst regret."""
    points, _ = tm.reference_points(df, source="published", target=POST_CHIP)
    predicted = model.held_out(points)
    device = predicted.model_device_seconds
    errors = validation.held_out_errors(points.loc[predicted.index], predicted.model_post_seconds)
    rows = []
    swept = sweeps(points)
    for (figure, size), group in swept.groupby(["experiment", "m"]):
        # the size band's 80 % half-width from the other figures' errors, as coverage sizes it
        widths = validation.conditional_halfwidths(errors[errors.fold != str(figure)], LEVEL)
        factor = math.exp(widths[validation.size_band(size, size, size)])
        best = group.ref_seconds.idxmin()
        model_pick = device.loc[group.index].idxmin()
        tied = group.index[device.loc[group.index] <= device.loc[model_pick] * factor]
        compiler_pick = group.seconds.idxmin()

        def lost(i, best=best):
            return float(points.loc[i].ref_seconds / points.loc[best].ref_seconds - 1)

        def blocks(i):
            r = points.loc[i]
            return f"({int(r.bm)},{int(r.bk)},{int(r.bn)})"

        rows.append(dict(figure=figure, size=int(size), blocks=len(group), post_best=blocks(best),
                         model_pick=blocks(model_pick), model_regret=lost(model_pick),
                         tie_set=len(tied), tie_set_worst_regret=max(lost(i) for i in tied),
                         post_best_in_tie_set=best in tied, compiler_pick=blocks(compiler_pick),
                         compiler_regret=lost(compiler_pick), band_factor=factor))
    return pd.DataFrame(rows)


def summary(table: pd.DataFrame) -> dict:
    return dict(sizes=len(table), model_zero=int((table.model_regret == 0).sum()),
                model_median=float(table.model_regret.median()), model_max=float(table.model_regret.max()),
                compiler_zero=int((table.compiler_regret == 0).sum()),
                compiler_median=float(table.compiler_regret.median()),
                compiler_max=float(table.compiler_regret.max()),
                best_in_ties=int(table.post_best_in_tie_set.sum()))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0] if argv else "results/matmul.parquet")
    table = regret(pd.read_parquet(path), FittedModel.read(path.parent / "timing_model.json"))
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    s = summary(table)
    print(f"\n{s['sizes']} sizes: the model's pick is the post's best at {s['model_zero']}, median regret "
          f"{100 * s['model_median']:.1f} %, worst {100 * s['model_max']:.1f} %; the post's best is in the "
          f"tie set at {s['best_in_ties']}. libtpu's raw estimate: best at {s['compiler_zero']}, median "
          f"{100 * s['compiler_median']:.1f} %, worst {100 * s['compiler_max']:.1f} %.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
