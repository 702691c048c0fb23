"""Whole models: the projections of a preset (models.yaml) or of a shapes file at a token batch, and the
total modelled time of their matmuls per batch."""
import dataclasses
import math
from pathlib import Path

import pandas as pd

from tpu_matmul_repro.advise.request import AdviceError

PRESETS = Path(__file__).with_name("models.yaml")
KEYS = {"name", "m", "k", "n", "count", "tokens_share"}


@dataclasses.dataclass(frozen=True)
class Projection:
    name: str
    shape: tuple  # (m, k, n)
    count: int  # matmuls of this shape per forward pass over the batch


@dataclasses.dataclass(frozen=True)
class Layout:
    name: str
    description: str
    tokens: int | None
    projections: tuple

    @property
    def shapes(self) -> list[tuple]:
        return list(dict.fromkeys(p.shape for p in self.projections))


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def layout(entry, tokens: int | None, where: str, name: str) -> Layout:
    """A model's projections at `tokens` tokens; AdviceError naming `where` (file or preset), the entry,
    the key and the value."""
    projections = entry.get("projections") if isinstance(entry, dict) else None
    if not isinstance(projections, list) or not projections:
        raise AdviceError(f"{where}: expected a mapping with a non-empty list 'projections'")
    out = []
    for i, p in enumerate(entry["projections"]):
        at = f"{where}: projections[{i}]"
        if not isinstance(p, dict):
            raise AdviceError(f"{at}: expected a mapping of {sorted(KEYS)}, got {p!r}")
        unknown = sorted(set(p) - KEYS)
        if unknown:
            raise AdviceError(f"{at}: unknown key {unknown[0]!r} (expected {', '.join(sorted(KEYS))})")
        for key in ("k", "n", "count") + (("m",) if "m" in p else ()):
            if key not in p:
                raise AdviceError(f"{at}: no {key!r} (each projection gives k, n and count)")
            if not _whole(p.get(key)):
                raise AdviceError(f"{at}.{key}: {p.get(key)!r} is not a whole number from 1")
        if "m" in p and "tokens_share" in p:
            raise AdviceError(f"{at}: give m or tokens_share, not both")
        if "m" in p:
            m = p["m"]
        else:
            share = p.get("tokens_share", 1)
            if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
                raise AdviceError(f"{at}.tokens_share: {share!r} is not a number in (0, 1]")
            if tokens is None:
                raise AdviceError(f"{at}: has no m: give --tokens (m is the batch's tokens"
                                  + (" times tokens_share)" if "tokens_share" in p else ")"))
            m = max(1, math.ceil(tokens * share))
        out.append(Projection(str(p.get("name", f"projection {i + 1}")), (m, p["k"], p["n"]), p["count"]))
    return Layout(name, str(entry.get("description", name)), tokens, tuple(out))


def preset(name: str, tokens: int | None) -> Layout:
    from tpu_matmul_repro.experiments.plan.config import load_yaml

    presets = load_yaml(PRESETS)
    if name not in presets:
        raise AdviceError(f"--model {name!r}: expected one of {', '.join(presets)}")
    if tokens is None:
        raise AdviceError(f"--model {name}: give --tokens, the batch's tokens (m of every projection)")
    return layout(presets[name], tokens, f"--model {name}", name)


def from_file(path: Path, tokens: int | None) -> Layout:
    from tpu_matmul_repro.experiments.plan.config import ConfigError, load_yaml

    try:
        entry = load_yaml(path, kind="shapes file")
    except ConfigError as e:
        raise AdviceError(f"--shapes-file {e}") from None
    return layout(entry, tokens, f"--shapes-file {path}", Path(path).stem)


def chosen(table: pd.DataFrame) -> pd.Series | None:
    """The row a projection would use: the best ranked blocks, or XLA where it is modelled faster."""
    timed = table[table.model_device_ms.notna() & ((table.kernel == "xla") | table["rank"].eq(1))]
    return None if timed.empty else timed.sort_values("model_device_ms").iloc[0]


def totals(model: Layout, tables: dict) -> pd.DataFrame:
    """Per projection: its count, what it uses and the modelled device ms of one call and of all its
    calls, with the 80 % band; `tables`: {shape: that shape's ranked table on one target}."""
    rows = []
    for p in model.projections:
        use = chosen(tables[p.shape])
        if use is None:
            rows.append(dict(projection=p.name, count=p.count, shape="x".join(map(str, p.shape)), use="none"))
            continue
        label = "XLA" if use.kernel == "xla" else f"({int(use.bm)},{int(use.bk)},{int(use.bn)})"
        factor = use.model_device_ms_hi80 / use.model_device_ms  # the 80 % band's factor
        shape_table = tables[p.shape]
        timed = shape_table[(shape_table.kernel == "xla") | shape_table["rank"].notna()]
        ties = int((timed.model_device_ms <= use.model_device_ms * factor * (1 + 1e-12)).sum()) - 1
        label += f" +{ties} tied" if ties else ""
        rows.append(dict(projection=p.name, count=p.count, shape="x".join(map(str, p.shape)), use=label,
                         ms=use.model_device_ms, lo80=use.model_device_ms_lo80, hi80=use.model_device_ms_hi80,
                         total_ms=p.count * use.model_device_ms,
                         total_lo80=p.count * use.model_device_ms_lo80,
                         total_hi80=p.count * use.model_device_ms_hi80))
    return pd.DataFrame(rows)


def text(model: Layout, target: str, device_kind: str, dtype: str, kernel: str, summary: pd.DataFrame) -> str:
    calls = int(summary["count"].sum())
    batch = f" at {model.tokens} tokens" if model.tokens else ""
    lines = [f"{model.description}{batch} on {target} ({device_kind}), {dtype}, kernel {kernel}: "
             f"{len(summary)} projections, {calls} matmuls per forward pass", "",
             f"{'projection':<24} {'count':>5}  {'shape':<18} {'use (+ ties)':<24} "
             f"{'device ms, one (80 %)':<26} {'all, ms':>10}"]
    for r in summary.itertuples():
        if r.use == "none":
            lines.append(f"{r.projection:<24} {r.count:>5}  {r.shape:<18} no candidate fits and XLA failed")
            continue
        one = f"{r.ms:.3f} x/{r.hi80 / r.ms:.2f}"
        lines.append(f"{r.projection:<24} {r.count:>5}  {r.shape:<18} {r.use:<24} {one:<26} "
                     f"{r.total_ms:>10.2f}")
    if "total_ms" in summary and summary.total_ms.notna().all():
        lo, hi = summary.total_lo80.sum(), summary.total_hi80.sum()
        lines += ["", f"Total modelled matmul time per forward pass{batch}: {summary.total_ms.sum():.1f} ms "
                      f"(device time; {lo:.1f} to {hi:.1f} ms adding up each projection's 80 % band, as if "
                      "their errors moved together: not a calibrated interval of the sum). Matmuls only: "
                      "attention's own products, norms and activations are not counted."]
    else:
        lines += ["", "No total: a projection has no modelled time (see its table with --csv)."]
    return "\n".join(lines)
