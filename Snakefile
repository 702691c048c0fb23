# tpu-matmul-repro: reproduces "TPU MatMul Kernel" (Pallas MatMul kernels v1-v5 against XLA).
# Rules live in rules/*.smk; experiments are data in config/config.yaml.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "rules/common.smk"
include: "rules/correctness.smk"
include: "rules/compile_study.smk"
include: "rules/measure.smk"
include: "rules/aggregate.smk"
include: "rules/figures.smk"
include: "rules/report.smk"


rule all:
    input:
        "results/correctness.parquet",
        "results/matmul.parquet",
        "results/fidelity.csv",
        "results/best_vs_xla.csv",
        "results/timing_model.csv",
        "results/claims.csv",
        expand("results/figures/{name}.png", name=FIGURES),
        expand("results/report/report.{lang}.{ext}", lang=["en", "zh"], ext=["html", "pdf"]),
