# Real measurements on this run's device (a TPU, or the CPU on request): one job per experiment
# and dtype, then one file per device and label, the file a user carries to other machines.


rule measure_job:
    output:
        "results/measured/{device}-{label}/{experiment}_{dtype}.parquet",
    log:
        "logs/measured/{device}-{label}/{experiment}_{dtype}.log",
    conda:
        "../environment.yml"
    # All cores: a measuring job runs alone, so its timings share the host with no other job, and
    # only one process at a time opens the TPU. A cluster run has no --cores (workflow.cores would
    # raise): there the profile gives the job a node of its own (profiles/slurm: --exclusive).
    threads: workflow.resource_settings.cores or 1
    params:
        job=lambda wc: codec.encode(PLAN.measure[(wc.experiment, wc.dtype)]),
        # the worker runs as `python -m`, outside the script's imports
        code=code_digest("scripts/measure_job.py", "experiments/measure/timing_worker.py"),
    script:
        "../scripts/measure_job.py"


rule measure_device:
    input:
        measure_outputs(),
    output:
        "results/measured/{device}-{label}.parquet",
    log:
        "logs/measured/{device}-{label}.log",
    conda:
        "../environment.yml"
    params:
        code=code_digest("scripts/concat_tables.py"),
    script:
        "../scripts/concat_tables.py"


# The VM step: `snakemake --cores 1 measure` writes this machine's file and nothing else. Without a
# device, asking for it is an error: at once and in one line when asked on the command line (an input
# function's error would come with a traceback).
if "measure" in sys.argv[1:] and not MEASURED:
    try:
        measure_device.measured_or_error(MEASURED, config["measure"]["device"])
    except ValueError as e:
        raise WorkflowError(str(e)) from None


rule measure:
    input:
        lambda wildcards: measure_device.measured_or_error(MEASURED, config["measure"]["device"]),
