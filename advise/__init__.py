"""Block-size advice for a Pallas matmul of any (m, k, n), dtype and TPU generation, without a TPU.

`advise 8192x4096x14336 --dtype bfloat16 --target v6e`: candidate blocks from the chip's
MXU width and VMEM (candidates.py), compiled deviceless by libtpu with the compile study's code and
cache (search.py), turned into device time by the timing model fitted on the post's published v5e
numbers, with its prediction intervals (model.py), ranked with ties said to be ties (table.py).
Every number is an estimate; docs/advisor.md says how each is made.
"""
