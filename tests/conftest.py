import os

# Tests run JAX on the CPU even where libtpu is installed (it is a pinned dependency).
os.environ["JAX_PLATFORMS"] = "cpu"

import pytest  # noqa: E402

TOLERANCES = {"float32": 1e-5, "bfloat16": 1e-2, "int8": 0}


@pytest.fixture
def tolerances():
    return dict(TOLERANCES)
