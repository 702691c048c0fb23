# The tidy table of every number (estimates, published, measured) and its summaries.


rule check_carried:
    input:
        "data/measured/{carried}.parquet",
    output:
        "results/carried/{carried}.checked",
    log:
        "logs/carried/{carried}.log",
    conda:
        "../environment.yml"
    params:
        min_samples=config["measure"]["samples"],
        max_rows=config["measure"]["max_carried_rows"],
        tolerance=config["measure"]["tolerance"],
        code=code_digest("scripts/check_carried.py"),
    script:
        "../scripts/check_carried.py"


# One configuration under one run label in two files stops here, naming both. The mark is named after
# the set of files it vouches for: taking a refused file out again leaves the previous run complete.
UNIQUE_MARK = (
    "results/carried/all-files-%s.unique"
    % hashlib.sha256("\n".join(MEASURED + IMPORTED).encode()).hexdigest()[:12]
)


rule check_carried_files:
    input:
        measured=MEASURED + IMPORTED,
        checked=[f"results/carried/{Path(p).stem}.checked" for p in IMPORTED],
    output:
        UNIQUE_MARK,
    log:
        UNIQUE_MARK.replace("results/", "logs/").replace(".unique", ".log"),
    conda:
        "../environment.yml"
    params:
        code=code_digest("scripts/check_carried_files.py"),
    script:
        "../scripts/check_carried_files.py"


rule aggregate:
    input:
        # the pipeline toolchain's, then the other toolchains' (rules/toolchains.smk)
        estimates=expand(
            "results/estimates/{target}.parquet", target=[t for t in TARGETS if t not in PLAN.served]
        )
        + TOOLCHAIN_ESTIMATES,
        published=PUBLISHED,
        # this run's measurements, and those carried here from other machines
        measured=MEASURED + IMPORTED,
        # carried files join only once checked: a bad one stops here, before the table is touched
        checked=[f"results/carried/{Path(p).stem}.checked" for p in IMPORTED]
        + ([UNIQUE_MARK] if IMPORTED else []),
    output:
        table="results/matmul.parquet",
        model="results/timing_model.json",
    log:
        "logs/aggregate/matmul.log",
    conda:
        "../environment.yml"
    params:
        code=code_digest("scripts/aggregate.py"),
    script:
        "../scripts/aggregate.py"


rule summaries:
    input:
        table="results/matmul.parquet",
        model="results/timing_model.json",
        # the public measurements' scope rows (rules/validation.smk), where the config scores them
        public=PUBLIC_FILES[1:],
    output:
        fidelity=reported_table("fidelity"),
        constants=reported_table("timing_model"),
        best_vs_xla=reported_table("best_vs_xla"),
        ablation=reported_table("model_ablation"),
    log:
        "logs/aggregate/summaries.log",
    conda:
        "../environment.yml"
    params:
        code=code_digest("scripts/summaries.py"),
    script:
        "../scripts/summaries.py"


rule claims:
    input:
        table="results/matmul.parquet",
        model="results/timing_model.json",
    output:
        reported_table("claims"),
    log:
        "logs/aggregate/claims.log",
    conda:
        "../environment.yml"
    params:
        code=code_digest("scripts/claims.py"),
    script:
        "../scripts/claims.py"
