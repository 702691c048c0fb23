"""The tidy table and what is derived from it: aggregation, fidelity, best-vs-XLA."""
