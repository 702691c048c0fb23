"""Exact correctness of every kernel on the CPU, in Pallas interpret mode."""
