# The tidy table of every number (estimates, published, measured) and its summaries.


rule aggregate:
    input:
        estimates=expand("results/estimates/{target}.parquet", target=TARGETS),
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
        constants="results/timing_model.csv",
        best_vs_xla="results/best_vs_xla.csv",
    log:
        "logs/aggregate/summaries.log",
    conda:
        "../environment.yml"
    script:
        "../scripts/summaries.py"


rule claims:
    input:
        "results/matmul.parquet",
    output:
        "results/claims.csv",
    log:
        "logs/aggregate/claims.log",
    conda:
        "../environment.yml"
    script:
        "../scripts/claims.py"
