# The history study (studies/history/README.md): `snakemake history`, or `all` with `studies: [history]`.
# It installs an environment per probed release, so it runs only when asked for.
from tpu_matmul_repro.studies.history.probes import settings_of

# The release list, read from the jax wheels once (tools/list_releases.py): planning needs no network.
RELEASES = local(os.path.relpath(REPO / "studies" / "history" / "data" / "releases.csv"))


# One job, sequential: each probe depends on the answers before it; environments and compiles are
# cached, so a rerun repeats neither.
rule history_bisect:
    input:
        releases=RELEASES,
        published=PUBLISHED,
    output:
        vmem="results/history/vmem_by_release.csv",
        first_change="results/history/first_change.csv",
        after_change="results/history/after_change.csv",
    log:
        "logs/history/bisect.log",
    conda:
        "../../environment.yml"
    resources:
        mem_mb=4000,
    params:
        settings=codec.encode(settings_of(config)),
        toolchains=codec.encode(TOOLCHAINS),
        code=code_digest("studies/history/scripts/bisect.py"),
    script:
        "scripts/bisect.py"


rule history_figure:
    input:
        vmem="results/history/vmem_by_release.csv",
        first_change="results/history/first_change.csv",
        releases=RELEASES,
    output:
        multiext("results/figures/history_vmem", ".png", ".svg", ".pdf", ".zh.png", ".zh.svg", ".zh.pdf"),
    log:
        "logs/history/figure.log",
    conda:
        "../../environment.yml"
    params:
        code=code_digest(
            "studies/history/scripts/figure.py",
            "figures/*.mplstyle",
            "CITATION.cff",
            "locale/*/LC_MESSAGES/*.po",
            "studies/history/locale/*/LC_MESSAGES/*.po",
        ),
    script:
        "scripts/figure.py"


rule history:
    input:
        "results/history/vmem_by_release.csv",
        "results/history/first_change.csv",
        "results/history/after_change.csv",
        "results/figures/history_vmem.png",


if "history" in config["studies"]:
    STUDY_OUTPUTS += rules.history.input
