# The then-and-now study (studies/then_and_now/README.md): in `all` when the config's `studies` lists it;
# `snakemake then_and_now` builds its table either way. Its claims file gives the key findings a verdict
# per toolchain beside the pipeline's (section.py).


rule then_and_now:
    input:
        "results/matmul.parquet",
    output:
        report(
            "results/then_and_now.csv",
            caption="caption.rst",
            category="Tables",
            labels={"table": "then_and_now.csv"},
        ),
    log:
        "logs/aggregate/then_and_now.log",
    conda:
        "../../environment.yml"
    params:
        code=code_digest("studies/then_and_now/scripts/then_and_now.py"),
    script:
        "scripts/then_and_now.py"


rule then_and_now_claims:
    input:
        "results/matmul.parquet",
    output:
        "results/then_and_now_claims.csv",
    log:
        "logs/aggregate/then_and_now_claims.log",
    conda:
        "../../environment.yml"
    params:
        code=code_digest("studies/then_and_now/scripts/then_and_now_claims.py"),
    script:
        "scripts/then_and_now_claims.py"


if "then_and_now" in config["studies"]:
    STUDY_OUTPUTS += rules.then_and_now.output
    REPORT_TABLES["then_and_now"] = rules.then_and_now.output[0]
    REPORT_TABLES["then_and_now_claims"] = rules.then_and_now_claims.output[0]
