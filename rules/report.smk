# The bilingual report: HTML and PDF from the tidy table, the figures and the kernels' code; one job per
# language, so that --cores 2 typesets both at once.


rule report:
    input:
        **REPORT_TABLES,
        table="results/matmul.parquet",
        model="results/timing_model.json",
        correctness="results/correctness.parquet",
        claims="results/claims.csv",
        fidelity="results/fidelity.csv",
        constants="results/timing_model.csv",
        ablation="results/model_ablation.csv",
        best_vs_xla="results/best_vs_xla.csv",
        advice=ADVICE_TABLES,
        advice_figures=ADVICE_PNGS,
        figures=FIGURE_PNGS,
        gallery="results/figures/index.html",
        licence="results/LICENSE.md",
    output:
        html="results/report/report.{lang}.html",
        pdf=report(
            "results/report/report.{lang}.pdf",
            caption="../report/captions/report.rst",
            category="Report",
            subcategory="{lang}",
        ),
    log:
        "logs/report/report.{lang}.log",
    wildcard_constraints:
        lang="|".join(LANGUAGES),
    conda:
        "../environment.yml"
    params:
        targets=TARGETS,
        figures=lambda wc: codec.encode(FIGURES),
        study_tables=list(REPORT_TABLES),
        # the config the report prints under "Configuration used"
        config=lambda wc: codec.encode(config),
        # the report quotes the kernels' code: every kernel module is part of its code
        code=code_digest(
            "scripts/report.py",
            "report/templates/**/*",
            "report/captions/*",
            "locale/*/LC_MESSAGES/*.po",
            *STUDY_CATALOGS,
            "locale/*/glossary.yaml",
            *STUDY_TEMPLATES,
            "kernels/*.py",
            "figures/*.mplstyle",
            "CITATION.cff",
            "benchmarks/default_run.md",
            modules=study_modules("specs", "figure", "section"),
        ),
    script:
        "../scripts/report.py"
