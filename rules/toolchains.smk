# Toolchains with environments of their own (docs/toolchains.md): the environment, then compile jobs
# whose workers run its Python. One that cannot be installed gives toolchain_error rows, not a failed run.


wildcard_constraints:
    toolchain="|".join(TOOLCHAIN_NAMES) or "^$",


rule toolchain_environment:
    output:
        "results/toolchains/{toolchain}/environment.json",
    log:
        "logs/toolchains/{toolchain}/environment.log",
    # before its compile jobs' turn: priorities do not pass to the jobs a job waits for, so at 0 it
    # would run after every compile job and its own compile job last, alone
    priority: lambda wc: 1 + toolchain_work(wc.toolchain)
    conda:
        "../environment.yml"
    params:
        toolchain=lambda wc: codec.encode(TOOLCHAINS[wc.toolchain]),
        path=lambda wc: str(toolchain_plan.env_path(config, TOOLCHAINS[wc.toolchain])),
        code=code_digest("scripts/toolchain_environment.py"),
    script:
        "../scripts/toolchain_environment.py"


rule toolchain_study_job:
    input:
        environment="results/toolchains/{toolchain}/environment.json",
    output:
        "results/toolchains/{toolchain}/estimates/{target}/{batch}.parquet",
    log:
        "logs/toolchains/{toolchain}/estimates/{target}/{batch}.log",
    wildcard_constraints:
        target="|".join(TOOLCHAIN_TARGETS) or "^$",
        batch="|".join(sorted({b for _, _, b in TOOLCHAIN_BATCHES})) or "^$",
    # in the compile jobs' order: longest first
    priority: lambda wc: 1 + batch_work((wc.toolchain, wc.target, wc.batch))
    conda:
        "../environment.yml"
    resources:
        mem_mb=4000,
    params:
        # "all" (runs: published): every job of the toolchain for the target; else one (experiment, dtype)
        jobs=lambda wc: codec.encode(TOOLCHAIN_BATCHES[(wc.toolchain, wc.target, wc.batch)]),
        toolchain=lambda wc: codec.encode(TOOLCHAINS[wc.toolchain]),
        path=lambda wc: str(toolchain_plan.env_path(config, TOOLCHAINS[wc.toolchain])),
        code=code_digest("scripts/toolchain_study_job.py"),
    script:
        "../scripts/toolchain_study_job.py"


rule toolchain_target:
    input:
        lambda wc: [
            f"results/toolchains/{wc.toolchain}/estimates/{wc.target}/{batch}.parquet"
            for t, target, batch in TOOLCHAIN_BATCHES
            if (t, target) == (wc.toolchain, wc.target)
        ],
    output:
        "results/toolchains/{toolchain}/estimates/{target}.parquet",
    log:
        "logs/toolchains/{toolchain}/estimates/{target}.log",
    wildcard_constraints:
        target="|".join(TOOLCHAIN_TARGETS) or "^$",
    conda:
        "../environment.yml"
    params:
        code=code_digest("scripts/concat_tables.py"),
    script:
        "../scripts/concat_tables.py"
