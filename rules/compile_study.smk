# The TPU compile study on CPU: one job per (target, experiment, dtype, part), then per-target tables
# (experiments/plan/job_lists.py: compile_parts, merge_baseline_jobs).


rule compile_study_job:
    output:
        "results/estimates/{target}/{experiment}_{dtype}.{part}.parquet",
    log:
        "logs/estimates/{target}/{experiment}_{dtype}.{part}.log",
    wildcard_constraints:
        dtype="|".join([*DTYPES, MERGED_BASELINE_DTYPE]),  # XLA's baseline: one job per target (plan/job_lists.py)
    # Longest first by expected_work: the short jobs (correctness, priority 0) fill the last gaps.
    priority: lambda wc: 1 + expected_work(PLAN.compile_jobs[(wc.target, wc.experiment, wc.dtype, wc.part)])
    conda:
        "../environment.yml"
    resources:
        # Two libtpu processes per job; the profiling one grows with the grids it walks.
        mem_mb=4000,
    params:
        job=lambda wc: codec.encode(PLAN.compile_jobs[(wc.target, wc.experiment, wc.dtype, wc.part)]),
        code=code_digest("scripts/compile_study_job.py"),
    script:
        "../scripts/compile_study_job.py"


rule compile_study_target:
    input:
        lambda wc: compile_outputs(wc.target),
    output:
        "results/estimates/{target}.parquet",
    log:
        "logs/estimates/{target}.log",
    conda:
        "../environment.yml"
    params:
        code=code_digest("scripts/concat_tables.py"),
    script:
        "../scripts/concat_tables.py"
