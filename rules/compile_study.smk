# The TPU compile study on CPU: one job per (target, experiment, dtype), then per-target tables.


rule compile_study_job:
    output:
        "results/estimates/{target}/{experiment}_{dtype}.parquet",
    log:
        "logs/estimates/{target}/{experiment}_{dtype}.log",
    params:
        job=lambda wc: settings(PLAN.study[(wc.target, wc.experiment, wc.dtype)]),
        code=code("scripts/compile_study_job.py"),
    resources:
        # Two libtpu processes per job; the profiling one grows with the grids it walks.
        mem_mb=4000,
    conda:
        "../environment.yml"
    script:
        "../scripts/compile_study_job.py"


rule compile_study_target:
    input:
        lambda wc: study_outputs(wc.target),
    output:
        "results/estimates/{target}.parquet",
    log:
        "logs/estimates/{target}.log",
    params:
        code=code("scripts/concat_tables.py"),
    conda:
        "../environment.yml"
    script:
        "../scripts/concat_tables.py"
