"""A TPU generation is one edit: a generation added to experiments/core/chips.py's CHIPS alone reaches
the config's checks, the plan, the advisor and the figures."""
import dataclasses
from pathlib import Path

import matplotlib.colors
import pytest
import yaml
from test_advise import write_run
from test_advise_cli_property import call, stand_in

from tpu_matmul_repro.experiments.core import chips

ROOT = str(Path(chips.__file__).resolve().parents[2])
FAKE = "v9z"
COLOR = "#123456"


@pytest.fixture
def fake_generation(monkeypatch):
    """CHIPS with one more generation (a v6e under another name, colour and HBM size): the one edit."""
    fake = dataclasses.replace(chips.CHIPS["v6e"], name=FAKE, device_kind="TPU v9z", color=COLOR,
                               hbm_bytes=64 * 2**30)
    monkeypatch.setitem(chips.CHIPS, FAKE, fake)
    return fake


def test_the_config_and_the_plan_take_a_new_generation(fake_generation):
    from tpu_matmul_repro.experiments.plan import config as config_checks
    from tpu_matmul_repro.experiments.plan.plan import make_plan

    config = yaml.safe_load(open(f"{ROOT}/config/config.yaml"))
    config["targets"] = ["v5e", FAKE]
    assert FAKE in config_checks.schema()["$defs"]["target"]["enum"]
    assert FAKE in config_checks.schema()["$defs"]["advised_target"]["enum"]
    plan = make_plan(config_checks.checked(config))
    assert plan.targets == ["v5e", FAKE]
    assert {t for t, *_ in plan.compile_jobs} == {"v5e", FAKE}


def test_an_unknown_generation_is_still_refused(fake_generation):
    from tpu_matmul_repro.experiments.plan import config as config_checks
    from tpu_matmul_repro.experiments.plan.plan import make_plan

    config = yaml.safe_load(open(f"{ROOT}/config/config.yaml"))
    config["targets"] = ["v5e", "v9y"]
    with pytest.raises(config_checks.ConfigError, match="v9y"):
        make_plan(config_checks.checked(config))


def test_the_advisor_advises_for_a_new_generation(fake_generation, tmp_path):
    write_run(tmp_path / "results")
    with stand_in(tmp_path):
        code, out, err = call(["4096x4096x4096", "--target", FAKE, "--csv", "--workers", "1"])
    assert code == 0, err
    rows = [line.split(",") for line in out.strip().splitlines()]
    target = rows[0].index("target")
    assert {r[target] for r in rows[1:]} == {FAKE}
    with stand_in(tmp_path):
        code, _, err = call(["4096x4096x4096", "--target", "v9y"])
    assert code == 2 and "v9y" in err and FAKE in err


def test_a_figure_draws_a_new_generation_in_its_colour(fake_generation, table):
    import pandas as pd

    from tpu_matmul_repro.figures import plots

    estimates = table[table.source == "estimate"]
    both = pd.concat([table, estimates.assign(target=FAKE)], ignore_index=True)
    fig = plots.plot_generations(both, "v5", "bfloat16", lang="en")
    mine = [line for line in fig.axes[0].get_lines() if FAKE in line.get_label()]
    assert mine and all(matplotlib.colors.to_hex(line.get_color()) == COLOR for line in mine)
    assert chips.generation_order(FAKE) == len(chips.CHIPS) - 1
