"""Block-size advice for a Pallas matmul of any (m, k, n), dtype and TPU generation, without a TPU.

`advise 8192x4096x14336 --dtype bfloat16 --target v6e`, or in Python
`tpu_matmul_repro.advise.advise(["8192x4096x14336"], targets=["v6e"])` for the same table as a
DataFrame: candidate blocks from the chip's MXU width and VMEM (candidates.py), compiled deviceless by
libtpu with the compile study's code and cache (search.py), turned into device time by the timing
model fitted on the post's published v5e numbers, with its prediction intervals (model.py), ranked
with ties said to be ties and a recommendation on top (table.py). Every number is an estimate;
docs/advisor.md says how each is made.
"""


def advise(shapes, **options):
    """The ranked table of `shapes` ("MxKxN" or (m, k, n)); options as advise.cli.advise takes them
    (dtype, targets, kernel, vmem_limit, results, config). AdviceError in one line for a refused request."""
    from tpu_matmul_repro.advise.cli import advise as ranked

    return ranked(shapes, **options)
