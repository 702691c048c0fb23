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
        # CITATION.cff: the citation embedded in every file
        code=code("scripts/figure.py", "figures/*.mplstyle", "CITATION.cff"),
    conda:
        "../environment.yml"
    script:
        "../scripts/figure.py"


# The gallery: every figure as a card with caption, files and snippets to paste; and the licence,
# attribution and citation that travel with results/. Reads the table, the catalog and the figures.
rule gallery:
    input:
        table="results/matmul.parquet",
        figures=FIGURE_PNGS,
        citation=CITATION,
    output:
        index="results/figures/index.html",
        index_zh="results/figures/index.zh.html",
        licence="results/LICENSE.md",
        attribution="results/ATTRIBUTION.md",
        citation="results/CITATION.cff",
    log:
        "logs/figures/gallery.log",
    params:
        figures=lambda wc: settings(FIGURES),
        code=code("scripts/gallery.py"),
    conda:
        "../environment.yml"
    script:
        "../scripts/gallery.py"
