# The timing model scored on public TPU matmul measurements, never fitted on them: each generation's
# cases compiled as the compile study's are, then scored; their scope rows join fidelity.csv.


rule public_compiles:
    output:
        "results/public/estimates/{generation}.parquet",
    log:
        "logs/public/estimates/{generation}.log",
    wildcard_constraints:
        generation="|".join(PUBLIC_JOBS) or "(?!)",  # none: a regex that matches nothing
    priority: lambda wc: 1 + expected_work(PUBLIC_JOBS[wc.generation])
    conda:
        "../environment.yml"
    resources:
        mem_mb=4000,
    params:
        job=lambda wc: codec.encode(PUBLIC_JOBS[wc.generation]),
        code=code_digest("scripts/compile_study_job.py"),
    script:
        "../scripts/compile_study_job.py"


rule public_scores:
    input:
        table="results/matmul.parquet",
        model="results/timing_model.json",
        public=PUBLIC_DATA,
        estimates=expand("results/public/estimates/{generation}.parquet", generation=PUBLIC_JOBS),
    output:
        scores=reported_table("public_scores"),
        fidelity="results/public/fidelity.csv",
    log:
        "logs/public/scores.log",
    conda:
        "../environment.yml"
    params:
        code=code_digest("scripts/public_scores.py"),
    script:
        "../scripts/public_scores.py"
