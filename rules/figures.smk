# Figures: each reads results/matmul.parquet only, and is drawn in every language and format.


rule figure:
    input:
        "results/matmul.parquet",
    output:
        multiext("results/figures/{name}", ".png", ".svg", ".pdf", ".zh.png", ".zh.svg", ".zh.pdf"),
    log:
        "logs/figures/{name}.log",
    params:
        spec=lambda wc: settings(FIGURES[wc.name]),
        code=code("scripts/figure.py", "figures/*.mplstyle"),
    conda:
        "../environment.yml"
    script:
        "../scripts/figure.py"
