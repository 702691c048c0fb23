"""Each kernel against float64 NumPy on non-square shapes, and argument checks before tracing."""
import jax.numpy as jnp
import numpy as np
import pytest

from tpu_matmul_repro.experiments.core.inputs import random_operands
from tpu_matmul_repro.experiments.correctness.interpret import relative_error
from tpu_matmul_repro.kernels.v1_naive import matmul_v1
from tpu_matmul_repro.kernels.v2_parallel import matmul_v2
from tpu_matmul_repro.kernels.v3_block import matmul_v3
from tpu_matmul_repro.kernels.v5_accumulator import matmul_v5
from tpu_matmul_repro.kernels.xla_baseline import matmul_xla

M, K, N = 256, 512, 384


def reference(a, b):
    return np.asarray(a, np.float64) @ np.asarray(b, np.float64)


@pytest.mark.parametrize(
    "fn, kwargs",
    [
        (matmul_v1, {}),
        (matmul_v3, dict(bm=128, bk=256, bn=128)),
        (matmul_v3, dict(bm=256, bk=512, bn=384)),  # whole-array blocks are allowed
        (matmul_v5, dict(bm=128, bk=128, bn=384)),
        (matmul_xla, {}),
    ],
)
@pytest.mark.parametrize("dtype, tol", [("float32", 1e-5), ("bfloat16", 1e-2)])
def test_float_kernels_match_numpy(fn, kwargs, dtype, tol):
    a, b = random_operands(M, K, N, dtype, seed=1)
    out = fn(a, b, interpret=True, **kwargs)
    assert out.shape == (M, N) and out.dtype == jnp.dtype(dtype)
    assert relative_error(out, reference(a, b)) < tol


def test_v2_splits_rows_and_columns():
    a, b = random_operands(256, 512, 1024, "float32", seed=2)
    out = matmul_v2(a, b, splits=2, interpret=True)
    assert relative_error(out, reference(a, b)) < 1e-5


@pytest.mark.parametrize("fn", [matmul_v5, matmul_xla])
def test_int8_accumulates_exactly_in_int32(fn):
    a, b = random_operands(128, 1024, 256, "int8", seed=3)
    kwargs = dict(bm=128, bk=256, bn=128) if fn is matmul_v5 else {}
    out = fn(a, b, interpret=True, **kwargs)
    assert out.dtype == jnp.int32
    # Sums of 1024 products of |x| <= 127 overflow int8 and bf16's mantissa: only int32 is exact.
    np.testing.assert_array_equal(np.asarray(out, np.int64), reference(a, b).astype(np.int64))


def test_v5_bf16_accumulates_in_float32_more_accurately_than_v3():
    a, b = random_operands(128, 2048, 128, "bfloat16", seed=4)
    ref = reference(a, b)
    err_v3 = relative_error(matmul_v3(a, b, bm=128, bk=128, bn=128, interpret=True), ref)
    err_v5 = relative_error(matmul_v5(a, b, bm=128, bk=128, bn=128, interpret=True), ref)
    assert err_v5 < err_v3 / 2


@pytest.mark.parametrize(
    "fn, kwargs, message",
    [
        (matmul_v3, dict(bk=100), "bk=100 does not divide k=512"),
        (matmul_v3, dict(bm=96), "bm=96 does not divide m=256"),
        (matmul_v3, dict(bn=192), "bn=192 must be a multiple of 128 or equal n=384"),
        (matmul_v5, dict(bm=4, bk=128, bn=128), "bm=4 must be a multiple of 8 or equal m=256"),
        (matmul_v5, dict(bm=0), "bm=0 must be a positive integer"),
        (matmul_v2, dict(splits=3), "splits=3 does not divide m=256"),
        (matmul_v2, dict(splits=4), "bn=96 must be a multiple of 128 or equal n=384"),
        (matmul_v1, dict(vmem_limit_bytes=-1), "vmem_limit_bytes=-1 must be a positive integer"),
    ],
)
def test_bad_blocks_raise_value_error_naming_values(fn, kwargs, message):
    a, b = random_operands(M, K, N, "float32", seed=0)
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        fn(a, b, interpret=True, **kwargs)


def test_bad_operands_raise_value_error():
    a, b = random_operands(M, K, N, "float32", seed=0)
    with pytest.raises(ValueError, match="contracting dims differ"):
        matmul_v3(a, b.T, interpret=True)
    a8, b8 = random_operands(M, K, N, "int8", seed=0)
    with pytest.raises(ValueError, match="dtype='int8' not supported"):
        matmul_v3(a8, b8, interpret=True)
    with pytest.raises(ValueError, match="operand dtypes differ"):
        matmul_xla(a, b.astype(jnp.bfloat16))


def test_each_kernel_s_spec_is_its_declared_facts():
    """kernels.KERNELS states each kernel's facts once: its module's SPEC carries the same facts, and
    lives in the file the report lists."""
    from tpu_matmul_repro import kernels

    assert list(kernels.REGISTRY) == list(kernels.DECLARED)
    for name, spec in kernels.REGISTRY.items():
        assert spec.name == name and spec.facts() == kernels.DECLARED[name], name
        assert kernels.source_file(name) == spec.module_path


def test_planning_a_run_imports_no_jax():
    """Every Snakemake start checks the config and plans the jobs: from the kernels' declared facts
    (kernels.DECLARED), so no start pays for importing jax."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys, yaml; from experiments.plan.config import checked; "
            "from experiments.plan.plan import make_plan; "
            "make_plan(checked(yaml.safe_load(open('config/config.yaml')))); "
            "print(sorted(m for m in sys.modules if m == 'jax' or m.startswith('jax.')))")
    root = Path(__file__).resolve().parent.parent
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
