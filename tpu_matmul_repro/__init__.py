"""tpu-matmul-repro: its sub-packages are the repository's top-level folders, linked here."""
