# Correctness of every kernel on the CPU (Pallas interpret mode), one job per kernel, then one table.


rule correctness_kernel:
    output:
        "results/correctness/{kernel}.parquet",
    log:
        "logs/correctness/{kernel}.log",
    params:
        cases=lambda wc: settings(PLAN.correctness[wc.kernel]),
        tolerance=lambda wc: settings(config["correctness"]["tolerance"]),
        num_cores=config["correctness"]["tpu_interpret"]["num_cores"],
        code=code("scripts/correctness_kernel.py"),
    # XLA's CPU runtime and the TPU interpret mode's simulated cores run threads: a job keeps both cores
    # busy (measured: 1.6 cores on average), so with --cores 2 it runs alone rather than slow another job.
    threads: 2
    conda:
        "../environment.yml"
    script:
        "../scripts/correctness_kernel.py"


rule correctness_table:
    input:
        expand("results/correctness/{kernel}.parquet", kernel=CORRECTNESS_KERNELS),
    output:
        "results/correctness.parquet",
    log:
        "logs/correctness/table.log",
    params:
        code=code("scripts/correctness_table.py"),
    conda:
        "../environment.yml"
    script:
        "../scripts/correctness_table.py"
