# Figures: each reads results/matmul.parquet only, and is drawn in every language and format.


rule figure:
    input:
        "results/matmul.parquet",
    output:
        multiext("results/figures/{name}", ".png", ".svg", ".pdf", ".zh.png", ".zh.svg", ".zh.pdf"),
    log:
        "logs/figures/{name}.log",
    params:
        spec=lambda wc: FIGURES[wc.name],
    conda:
        "../environment.yml"
    script:
        "../scripts/figure.py"
