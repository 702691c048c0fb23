# The bilingual report: HTML and PDF from the tidy table, the figures and the kernels' code.


rule report:
    input:
        table="results/matmul.parquet",
        correctness="results/correctness.parquet",
        figures=expand("results/figures/{name}.png", name=FIGURES),
        gallery="results/figures/index.html",
        licence="results/LICENSE.md",
        templates=REPORT_SOURCES,
    output:
        "results/report/report.en.html",
        "results/report/report.zh.html",
        "results/report/report.en.pdf",
        "results/report/report.zh.pdf",
    log:
        "logs/report/report.log",
    params:
        targets=TARGETS,
        figures=FIGURES,
    conda:
        "../environment.yml"
    script:
        "../scripts/report.py"
