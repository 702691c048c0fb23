rule correctness_kernel:
    input:
        code=CORRECTNESS_CODE,
    output:
        "results/correctness/{kernel}.parquet",
    log:
        "logs/correctness/{kernel}.log",
    params:
        cases=lambda wc: CORRECTNESS_CASES[wc.kernel],
        tolerance=config["correctness"]["tolerance"],
        num_cores=config["correctness"].get("tpu_interpret", {}).get("num_cores", 1),
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
    conda:
        "../environment.yml"
    script:
        "../scripts/correctness_table.py"
