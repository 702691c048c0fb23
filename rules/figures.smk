# Figures: all read results/matmul.parquet only, and each is drawn in every language and format.


rule figures:
    input:
        table="results/matmul.parquet",
        model="results/timing_model.json",
    output:
        [reported(path) for path in FIGURE_FILES],
    log:
        "logs/figures/figures.log",
    conda:
        "../environment.yml"
    # One job draws them all, in a process per thread (--set-threads figures=N for more than 2).
    threads: 2
    params:
        figures=lambda wc: codec.encode(FIGURES),
        # CITATION.cff: the citation embedded in every file; the catalog: the words in every language
        code=code_digest(
            "scripts/draw_figures.py",
            "figures/*.mplstyle",
            "CITATION.cff",
            "locale/*/LC_MESSAGES/*.po",
            *STUDY_CATALOGS,
            modules=study_modules("specs", "figure"),
        ),
    script:
        "../scripts/draw_figures.py"


# The gallery: every figure as a card with caption, files and snippets to paste; and the licence,
# attribution and citation that travel with results/.
rule gallery:
    input:
        table="results/matmul.parquet",
        model="results/timing_model.json",
        figures=FIGURE_PNGS,
        # the advice figures are cards too, described from their tables (figures/advice_figure.py)
        advice=ADVICE_TABLES,
        advice_figures=ADVICE_PNGS,
        citation=CITATION,
    output:
        index="results/figures/index.html",
        index_zh="results/figures/index.zh.html",
        licence="results/LICENSE.md",
        attribution="results/ATTRIBUTION.md",
        citation="results/CITATION.cff",
    log:
        "logs/figures/gallery.log",
    conda:
        "../environment.yml"
    params:
        figures=lambda wc: codec.encode(FIGURES),
        code=code_digest(
            "scripts/gallery.py",
            "locale/*/LC_MESSAGES/*.po",
            *STUDY_CATALOGS,
            modules=study_modules("specs", "figure"),
        ),
    script:
        "../scripts/gallery.py"


# The README's figure, copied from a finished run (not part of `all`: it writes into the tracked docs/):
#   python3 -m snakemake --cores 1 readme_figure
rule readme_figure:
    input:
        "results/figures/v5_bfloat16_v5e.png",
    output:
        "docs/figures/v5_bfloat16_v5e.png",
    log:
        "logs/figures/readme_figure.log",
    conda:
        "../environment.yml"
    shell:
        "cp {input} {output} 2> {log}"
