# Toolchains with environments of their own (config `toolchains`, experiments/plan/toolchains.py): the
# environment is built once per set of pins in the cache folder, then the toolchain's compile jobs run
# their workers with its Python. A toolchain that cannot be installed gives toolchain_error rows whose
# error says why, so the rest of the run (the pipeline toolchain's results, figures, report) still builds.


wildcard_constraints:
    toolchain="|".join(TOOLCHAIN_NAMES) or "^$",


rule toolchain_environment:
    output:
        "results/toolchains/{toolchain}/environment.json",
    log:
        "logs/toolchains/{toolchain}/environment.log",
    params:
        toolchain=lambda wc: settings(TOOLCHAINS[wc.toolchain]),
        path=lambda wc: str(toolchain_plan.env_path(config, TOOLCHAINS[wc.toolchain])),
        code=code("scripts/toolchain_environment.py"),
    conda:
        "../environment.yml"
    script:
        "../scripts/toolchain_environment.py"


rule toolchain_study_job:
    input:
        environment="results/toolchains/{toolchain}/environment.json",
    output:
        "results/toolchains/{toolchain}/estimates/{target}.parquet",
    log:
        "logs/toolchains/{toolchain}/estimates/{target}.log",
    wildcard_constraints:
        target="|".join(TOOLCHAIN_TARGETS) or "^$",
    params:
        # every job of the toolchain for the target, in one Snakemake job: they share compile workers
        jobs=lambda wc: settings(toolchain_jobs(wc.toolchain, wc.target)),
        toolchain=lambda wc: settings(TOOLCHAINS[wc.toolchain]),
        path=lambda wc: str(toolchain_plan.env_path(config, TOOLCHAINS[wc.toolchain])),
        code=code("scripts/toolchain_study_job.py"),
    resources:
        mem_mb=4000,
    # started among the compile-study jobs by its work (longest first), not left for the end
    priority: lambda wc: 1 + sum(expected_work(job) for job in toolchain_jobs(wc.toolchain, wc.target))
    conda:
        "../environment.yml"
    script:
        "../scripts/toolchain_study_job.py"


rule then_and_now:
    input:
        "results/matmul.parquet",
    output:
        "results/then_and_now.csv",
    log:
        "logs/aggregate/then_and_now.log",
    params:
        code=code("scripts/then_and_now.py"),
    conda:
        "../environment.yml"
    script:
        "../scripts/then_and_now.py"
