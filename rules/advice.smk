# Block-size advice for the config's layer shapes (advice.shapes), from this run's timing model.
from tpu_matmul_repro.advise.pipeline import missing_fit, refused

# Before any job: a request the advisor would refuse, or a run whose model would have nothing to fit.
if ADVICE:
    _why = refused(ADVICE, advice_request) or missing_fit(PLAN, PUBLISHED)
    if _why:
        raise WorkflowError(_why)


rule advice:
    input:
        model="results/timing_model.json",
        # off v5e its errors are a floor under the bands (advise/model.py with_public)
        public=PUBLIC_FILES[:1],
    output:
        table="results/advice/{shape}.csv",
        # the figure in every language and format (figures/advice_figure.py)
        figures=advice_figures("{shape}"),
    log:
        "logs/advice/{shape}.log",
    conda:
        "../environment.yml"
    threads: 2  # two pairs of compile workers at once; --cores 1 gives it one
    params:
        request=lambda wc: codec.encode(advice_request(wc.shape)),
        code=code_digest(
            "scripts/advice.py",
            "CITATION.cff",
            "locale/*/LC_MESSAGES/*.po",
        ),
    script:
        "../scripts/advice.py"


# `snakemake all_advice` (with `--configfile config/advice.yaml` for the eight Llama-3 projections)
rule all_advice:
    input:
        ADVICE_FILES,
