"""One fit per run: the aggregate fits the timing model and its refits once (results/timing_model.json);
the scripts after it (summaries, public scores, claims, figures) read that file and fit nothing, the
ablation's variants aside. The scripts run here in-process, as Snakemake runs them, on the synthetic
table of tests/test_timing_model.py, with every call of the fit counted."""
import runpy
from pathlib import Path

import pytest
from test_timing_model import synthetic_table

from tpu_matmul_repro.analysis import ablation
from tpu_matmul_repro.analysis import timing_model as tm
from tpu_matmul_repro.experiments.core import codec
from tpu_matmul_repro.experiments.plan.config import checked, load_yaml

ROOT = Path(__file__).resolve().parent.parent
FIGURES = {"v5_bfloat16_v5e": ("experiment", dict(experiment="v5", dtype="bfloat16", target="v5e")),
           "roofline_v5e": ("roofline", dict(target="v5e")), "fidelity_v5e": ("fidelity", dict(target="v5e"))}


class Named(list):
    """A list whose items also have names, as Snakemake's input, output and params."""

    def __init__(self, named: dict):
        super().__init__(named.values())
        self.__dict__.update(named)

    def items(self):
        return {k: v for k, v in self.__dict__.items()}.items()


class Job:
    """The `snakemake` object a script sees: its rule's inputs, outputs, log, params and config."""

    def __init__(self, rule: str, config: dict, input: dict, output: dict, params: dict | None = None):
        self.rule, self.config, self.threads = rule, config, 1
        self.input, self.output, self.params = Named(input), Named(output), Named(params or {})
        self.log, self.wildcards = [str(output.pop("log"))], Named({})
        self.output = Named(output)


def run_script(name: str, job: Job) -> None:
    runpy.run_path(str(ROOT / "scripts" / f"{name}.py"), init_globals={"snakemake": job}, run_name="__main__")


@pytest.mark.slow
def test_a_run_fits_the_model_once_and_every_later_job_reads_it(tmp_path, monkeypatch):
    monkeypatch.setenv("TPU_MATMUL_REPRO_CACHE", "off")  # no output cache: every script does its work
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))  # as Snakemake puts a script's folder first
    df = synthetic_table()  # fitted itself: before the fits are counted
    fits, exempt = [], []
    fit = tm._fit
    monkeypatch.setattr(tm, "_fit", lambda *a, **k: fits.append(1) or fit(*a, **k))
    table = ablation.ablation_table

    def counted_apart(points):  # the ablation fits each variant by design: its fits counted apart
        before = len(fits)
        try:
            return table(points)
        finally:
            exempt.append(len(fits) - before)

    monkeypatch.setattr(ablation, "ablation_table", counted_apart)
    # the ablation's own fits are exempt: two of its variants show that it runs, in a tenth of the time
    monkeypatch.setattr(ablation, "VARIANTS", ablation.VARIANTS[:2])
    config = checked(load_yaml(ROOT / "config" / "config.yaml")) | {"studies": []}
    estimates, published = tmp_path / "estimates.parquet", tmp_path / "published.csv"
    df[df.source == "estimate"].assign(toolchain="current").to_parquet(estimates)
    pub = df[df.source == "published"]
    pub.assign(figure=pub.experiment.str[1:])[["figure", "kernel", "dtype", "m", "k", "n", "bm", "bk", "bn",
                                                "status", "tflops"]].to_csv(published, index=False)
    results = tmp_path / "results"
    results.mkdir()
    table_path, model_path = results / "matmul.parquet", results / "timing_model.json"
    sources = dict(estimates=[str(estimates)], published=str(published), measured=[])
    outputs = dict(table=str(table_path), model=str(model_path), log=tmp_path / "a.log")
    run_script("aggregate", Job("aggregate", config, sources, outputs))
    points, _ = tm.reference_points(df)
    figures = points.experiment.nunique()
    assert len(fits) == 1 + figures + points.m.nunique() + figures * (figures - 1), \
        ("the aggregate: the fit, its refits without each of the post's figures and each size, and the "
         "nested refits that size each figure's band without it (validation.nested_halfwidths)")
    made = len(fits)
    inputs = dict(table=str(table_path), model=str(model_path))
    run_script("summaries", Job("summaries", config, dict(inputs, public=[]), dict(
        fidelity=str(results / "fidelity.csv"), constants=str(results / "timing_model.csv"),
        best_vs_xla=str(results / "best_vs_xla.csv"), ablation=str(results / "model_ablation.csv"),
        log=tmp_path / "s.log")))
    assert exempt and exempt[0] > 0  # the ablation ran, and fitted
    public = dict(inputs, public=str(ROOT / "data" / "public_measurements.csv"), estimates=[])
    run_script("public_scores", Job("public_scores", config, public, dict(
        scores=str(results / "public_scores.csv"), fidelity=str(results / "public_fidelity.csv"),
        log=tmp_path / "p.log")))
    run_script("claims", Job("claims", config, inputs, dict(claims=str(results / "claims.csv"),
                                                            log=tmp_path / "c.log")))
    figures = results / "figures"
    run_script("draw_figures", Job("figures", config, inputs, dict(
        first=str(figures / "v5_bfloat16_v5e.png"), log=tmp_path / "f.log"),
        dict(figures=codec.encode(FIGURES))))
    assert len(fits) - sum(exempt) == made, "a job after the aggregate fitted the model again"
    assert {p.name for p in figures.glob("*.png")} >= {f"{name}.png" for name in FIGURES}
