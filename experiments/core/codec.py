"""Frozen dataclasses (jobs, cases, settings) to canonical JSON and back: a job's settings travel as one
JSON param that Snakemake records (docs/reproducibility.md).
"""
import dataclasses
import importlib
import json


def encode(obj) -> str:
    """Canonical JSON (sorted keys, no spaces) of a dataclass tree with tuples, lists, dicts, scalars."""
    return json.dumps(_plain(obj), sort_keys=True, separators=(",", ":"))


def decode(text: str):
    return _rebuild(json.loads(text))


def _plain(obj):
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        cls = type(obj)
        fields = {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        return {"__dataclass__": f"{cls.__module__}:{cls.__qualname__}", **fields}
    if isinstance(obj, tuple):
        return {"__tuple__": [_plain(x) for x in obj]}
    if isinstance(obj, list):
        return [_plain(x) for x in obj]
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj):
            raise TypeError(f"only str dict keys can be encoded, got {list(obj)[:3]}")
        return {k: _plain(v) for k, v in obj.items()}
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    raise TypeError(f"cannot encode {type(obj).__name__}: {obj!r}")


def _rebuild(value):
    if isinstance(value, list):
        return [_rebuild(x) for x in value]
    if not isinstance(value, dict):
        return value
    if "__tuple__" in value:
        return tuple(_rebuild(x) for x in value["__tuple__"])
    if "__dataclass__" in value:
        module, _, name = value["__dataclass__"].partition(":")
        cls = getattr(importlib.import_module(module), name)
        return cls(**{k: _rebuild(v) for k, v in value.items() if k != "__dataclass__"})
    return {k: _rebuild(v) for k, v in value.items()}
