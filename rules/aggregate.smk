# The tidy table of every number (estimates, published, measured) and its summaries.


rule aggregate:
    input:
        # the pipeline toolchain's, then the other toolchains' (rules/toolchains.smk)
        estimates=expand("results/estimates/{target}.parquet", target=TARGETS) + TOOLCHAIN_ESTIMATES,
        published=PUBLISHED,
        # this run's measurements, and those carried here from other machines
        measured=MEASURED + IMPORTED,
    output:
        "results/matmul.parquet",
    log:
        "logs/aggregate/matmul.log",
    conda:
        "../environment.yml"
    script:
        "../scripts/aggregate.py"


rule summaries:
    input:
        "results/matmul.parquet",
    output:
        fidelity="results/fidelity.csv",
        best_vs_xla="results/best_vs_xla.csv",
    log:
        "logs/aggregate/summaries.log",
    conda:
        "../environment.yml"
    script:
        "../scripts/summaries.py"
