# Correctness of every kernel on the CPU (Pallas interpret mode), one job per kernel, then one table.


rule correctness_kernel:
    output:
        "results/correctness/{kernel}.parquet",
    log:
        "logs/correctness/{kernel}.log",
    conda:
        "../environment.yml"
    # A job alone uses ~1.5 cores (XLA's CPU threads): declared as 1, so that with --cores 2 it runs
    # beside another job, not alone. The SLURM and Kubernetes profiles set 2 threads for it.
    threads: 1
    params:
        cases=lambda wc: codec.encode(PLAN.correctness[wc.kernel]),
        tolerance=lambda wc: codec.encode(config["correctness"]["tolerance"]),
        num_cores=config["correctness"]["tpu_interpret"]["num_cores"],
        code=code_digest("scripts/correctness_kernel.py"),
    script:
        "../scripts/correctness_kernel.py"


rule correctness_table:
    input:
        expand("results/correctness/{kernel}.parquet", kernel=CORRECTNESS_KERNELS),
    output:
        "results/correctness.parquet",
    log:
        "logs/correctness/table.log",
    conda:
        "../environment.yml"
    params:
        code=code_digest("scripts/correctness_table.py"),
    script:
        "../scripts/correctness_table.py"
