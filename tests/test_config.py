"""Bad configurations are refused with the key and the value, before any job runs."""
import copy
from pathlib import Path

import pytest
import yaml

from experiments.plan import config as experiment_config

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def config():
    return yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def test_shipped_configs_are_valid():
    for path in (ROOT / "config").glob("config*.yaml"):
        experiment_config.load(path)


def set_key(config, path, value):
    node = config
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return config


@pytest.mark.parametrize(
    "path, value, message",
    [
        (["correctness", "kernels", "v3", "blocks"], [[128, 100, 128]], r"correctness\.kernels\.v3\.blocks: bk=100 does not divide k=256"),
        (["correctness", "kernels", "v1", "dtypes"], ["float8"], r"correctness\.kernels\.v1\.dtypes\[0\]: 'float8' is not one of"),
        (["correctness", "kernels", "v1", "dtypes"], ["int8"], r"correctness\.kernels\.v1: dtype='int8' not supported by kernel 'v1'"),
        (["correctness", "shapes"], [[0, 256, 256]], r"correctness\.shapes\[0\]\[0\]: 0 is less than the minimum of 1"),
        (["correctness", "shapes"], [], r"correctness\.shapes: \[\] should be non-empty"),
        (["correctness", "kernels", "v2", "splits"], [3], r"correctness\.kernels\.v2\.splits: splits=3 does not divide m=256"),
        (["correctness", "kernels", "v9"], {"dtypes": ["float32"]}, r"'v9' is not one of"),
        (["correctness", "tolerance", "float32"], "tight", r"correctness\.tolerance\.float32: 'tight' is not of type 'number'"),
    ],
)
def test_bad_values_name_key_and_value(config, path, value, message):
    with pytest.raises(experiment_config.ConfigError, match=message):
        experiment_config.validate(set_key(copy.deepcopy(config), path, value))


def test_missing_blocks_for_blocked_kernel(config):
    del config["correctness"]["kernels"]["v5"]["blocks"]
    with pytest.raises(experiment_config.ConfigError, match=r"correctness\.kernels\.v5\.blocks: required"):
        experiment_config.validate(config)
