"""Pallas TPU MatMul kernels from the post "TPU MatMul Kernel" (v1, v2, v3, v5) and the XLA baseline.

v4 is not a kernel of its own: it is v3's kernel swept over block sizes (see `experiments/`).
"""
from kernels.v1_naive import matmul_v1
from kernels.v2_parallel import matmul_v2
from kernels.v3_block import matmul_v3
from kernels.v5_accumulator import matmul_v5
from kernels.xla_baseline import matmul_xla

# Name used in configs and result tables -> wrapper. v4 reuses v3's kernel.
KERNELS = {
    "v1": matmul_v1,
    "v2": matmul_v2,
    "v3": matmul_v3,
    "v5": matmul_v5,
    "xla": matmul_xla,
}

__all__ = ["KERNELS", "matmul_v1", "matmul_v2", "matmul_v3", "matmul_v5", "matmul_xla"]
