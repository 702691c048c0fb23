"""Experiments over the kernels: correctness on CPU, the TPU compile study, and the tidy tables."""
