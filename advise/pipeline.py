"""The advice of a pipeline run ranks with the run's own timing model: checked while the run is
planned that the model will have points to fit, so a config that compiles none of the post's
configurations stops before any job, in one line."""
import numpy as np
import pandas as pd

from tpu_matmul_repro.analysis import timing_model as tm
from tpu_matmul_repro.analysis import validation
from tpu_matmul_repro.analysis.aggregate import load_published
from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.experiments.core.jobs import searched
from tpu_matmul_repro.experiments.plan.toolchains import primary

TARGET = POST_CHIP  # the published numbers the model is fitted on are this chip's


def planned_points(plan, published) -> pd.DataFrame:
    """The post's published ok configurations that the plan's jobs compile for v5e, as a fit pairs them
    (XLA's with the baseline of the same experiment and dtype at that shape)."""
    toolchain = plan.served.get(TARGET, primary(plan.config))
    jobs = [job for job in (*plan.compile_jobs.values(), *plan.toolchain_jobs.values())
            if job.target == TARGET and job.toolchain == toolchain]
    own = {(job.experiment, case) for job in jobs for case in job.cases if not searched(case, job)}
    shapes = {(experiment, case.dtype, case.m, case.k, case.n) for experiment, case in own
              if experiment != "xla"}
    baseline = {case for experiment, case in own if experiment == "xla"}
    ref = load_published(published)
    ref = ref[ref.status == "ok"]
    keep = []
    for r in ref.itertuples():
        blocks = [None if pd.isna(b) else int(b) for b in (r.bm, r.bk, r.bn)]
        case = Case(r.kernel, r.dtype, int(r.m), int(r.k), int(r.n), *blocks)
        if r.kernel == "xla":
            keep.append(case in baseline and (r.experiment, r.dtype, case.m, case.k, case.n) in shapes)
        else:
            keep.append((r.experiment, case) in own)
    return ref[np.array(keep, dtype=bool)].reset_index(drop=True)


def missing_fit(plan, published) -> str:
    """Why the run's timing model could not rank advice ("" when it can): too few planned points for the
    fit, for a refit without a figure, or for one of the band's levels."""
    points = planned_points(plan, published)
    need = len(tm.PARAMS) + 2  # timing_model._fit: the constants and two degrees of freedom
    short = [(str(value), len(train)) for value, train, _ in validation.folds(points, "experiment")
             if len(train) < need]
    levels = [level for level in validation.LEVELS
              if not np.isfinite(validation.conformal_quantile(np.zeros(len(points)), level))]
    if len(points) < need:
        problem = f"it would have {len(points)} (a fit needs {need})"
    elif short:
        problem = (f"the fit without figure {short[0][0]} would have {short[0][1]} (the cross-validation "
                   f"that sizes the band needs {need} in each)")
    elif levels:
        problem = f"its {len(points)} are too few for the {round(100 * levels[0])} % band"
    else:
        return ""
    return (f"advice.shapes needs this run's timing model, fitted on the post's published {POST_CHIP} "
            f"configurations the run compiles for {POST_CHIP}, but {problem}: include {POST_CHIP} in targets "
            "and the post's "
            "experiments at its sizes (an experiment with shapes and no sizes compiles none of them), or "
            "leave advice.shapes empty")


def refused(shapes: dict, request_of) -> str:
    """Why the advisor would refuse the config's advice (a shape beyond a target's HBM, a limit outside
    a target's range), "" if it would not: `shapes` {name: shape}, `request_of(name)` its request."""
    from tpu_matmul_repro.advise.request import AdviceError, checked
    from tpu_matmul_repro.experiments.core.units import MiB

    for name in shapes:
        wanted = request_of(name)
        limit = wanted["vmem_limit_mib"] * MiB if wanted["vmem_limit_mib"] else None
        try:
            checked([wanted["shape"]], wanted["dtype"], wanted["targets"], wanted["kernel"], limit)
        except AdviceError as e:
            key = "advice.vmem_limit_mib" if str(e).startswith("--vmem-limit") else "advice.shapes"
            return f"invalid config: {key}: {str(e).removeprefix('--vmem-limit ')}"
    return ""
