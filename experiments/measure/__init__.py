"""Real measurements on a TPU (or XLA on the CPU): device detection, the timing harness, statistics."""
