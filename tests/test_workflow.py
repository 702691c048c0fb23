"""The Snakemake workflow end to end on the CI-sized config, and its refusal of bad configs."""
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    """Run Snakemake on this repository's Snakefile with `workdir` as its working directory."""
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), *args]
    return subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=900)


@pytest.fixture
def workdir(tmp_path):
    shutil.copytree(ROOT / "config", tmp_path / "config")
    return tmp_path


def test_lint_passes(workdir):
    result = snakemake(workdir, "--lint")
    assert result.returncode == 0, result.stdout + result.stderr


def carried_measurement(workdir: Path) -> Path:
    """A measurement file as another machine would leave it: here the CPU, measured by the same code."""
    from experiments.cases import Case
    from experiments.device import Device
    from experiments.measure import MeasureJob, Settings, run_measure_job

    cases = (Case("xla", "float32", 256, 256, 256),)
    job = MeasureJob(Device("cpu", "cpu", "cpu", 1), "laptop", "xla", cases, settings=Settings(samples=5))
    path = workdir / "data" / "measured" / "cpu-laptop.parquet"
    path.parent.mkdir(parents=True)
    run_measure_job(job).to_parquet(path)
    return path


@pytest.mark.slow
def test_ci_config_runs_end_to_end(workdir):
    carried_measurement(workdir)
    result = snakemake(workdir, "--cores", "2", "--configfile", "config/config.ci.yaml", "--replace-workflow-config")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    df = pd.read_parquet(workdir / "results" / "correctness.parquet")
    assert df.passed.all()
    assert set(df["mode"]) == {"interpret", "tpu-interpret"}
    assert set(df.kernel) == {"v1", "v2", "v3", "v5", "xla"}
    table = pd.read_parquet(workdir / "results" / "matmul.parquet")
    estimates = table[table.source == "estimate"]
    assert set(estimates.target) == {"v5e"}  # the CI config replaced, not merged into, the default
    assert set(estimates.experiment) == {"v1", "v3", "v5"}
    v1 = estimates[(estimates.kernel == "v1") & ~estimates.raised_limit].set_index("m").status
    assert v1.to_dict() == {1024: "ok", 2048: "vmem_oom"}
    assert (workdir / "results" / "estimates" / "v5e.parquet").exists()
    assert (workdir / "results" / "fidelity.csv").read_text().startswith("target,compared_with,experiment")
    # measured on this machine's CPU (the CI config asks for it) and carried in from data/measured/
    measured = table[table.source == "measured"]
    assert set(measured.run_label) == {"ci", "laptop"} and (measured.status == "ok").all()
    assert (measured.n_samples >= 5).all() and (measured.tflops > 0).all()
    assert (workdir / "results" / "measured" / "cpu-ci.parquet").exists()
    figures = workdir / "results" / "figures"
    for name in ("v1_float32_v5e", "v5_bfloat16_v5e", "vmem_v5e", "fidelity_v5e"):
        for suffix in (".png", ".svg", ".pdf", ".zh.png", ".zh.svg", ".zh.pdf"):
            assert (figures / f"{name}{suffix}").stat().st_size > 0
    for lang in ("en", "zh"):
        html = (workdir / "results" / "report" / f"report.{lang}.html").read_text()
        assert "v1" in html and "</html>" in html
        assert ("run laptop" if lang == "en" else "运行 laptop") in html  # the carried measurement's table
        assert (workdir / "results" / "report" / f"report.{lang}.pdf").read_bytes().startswith(b"%PDF")


def test_bad_config_fails_before_any_job(workdir):
    bad = workdir / "config" / "bad.yaml"
    bad.write_text((workdir / "config" / "config.ci.yaml").read_text().replace("[128, 128, 128]", "[128, 100, 128]"))
    result = snakemake(workdir, "--cores", "1", "--configfile", "config/bad.yaml", "--replace-workflow-config")
    assert result.returncode != 0
    assert "bk=100 does not divide k=512" in result.stdout + result.stderr
    assert not (workdir / "results").exists()
