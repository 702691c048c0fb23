"""Where an experiment's block search runs: a config question the plan and the figure catalog share (a
module of its own so that the figures ask it without importing the kernels and jax)."""


def search_covers(spec: dict, dtype: str, target: str) -> bool:
    """Whether an experiment's block search (its config `spec`) runs for `dtype` on `target`, one of the
    targets compiled for: its `search.targets` and `search.dtypes`, each all of them when absent."""
    if "search" not in spec:
        return False
    search = spec["search"]
    return target in search.get("targets", [target]) and dtype in search.get("dtypes", spec["dtypes"])
