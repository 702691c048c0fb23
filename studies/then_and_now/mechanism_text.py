"""The then-and-now section's sentences on which component doubled the post's VMEM requests, from
data/mechanism.csv and data/mechanism_ir_version.csv; the rule: README.md.
"""
from pathlib import Path

import numpy as np
import pandas as pd

from tpu_matmul_repro.experiments.core.units import MiB

DATA = Path(__file__).resolve().parent / "data"
BEFORE = dict(jax="0.8.0", libtpu="0.0.24")
AFTER = dict(jax="0.8.1", libtpu="0.0.30")
NEW_JAX = dict(jax=AFTER["jax"], libtpu=BEFORE["libtpu"])  # the cross pair with the new jax
NEW_LIBTPU = dict(jax=BEFORE["jax"], libtpu=AFTER["libtpu"])  # the cross pair with the new libtpu
DOUBLED_TOLERANCE = 0.01  # relative: (512, 1024, 1024) asks for 16.06 MiB, two buffers of 8 MiB of blocks
ONE_BUFFER_EXTRA = 0.05  # relative: (1024, 1024, 1024) asks for 12.32 MiB, 12 MiB of blocks and 0.32 MiB
SAME_TOLERANCE = 0.001  # relative: the same request, not merely a close one
BLOCKS = ["kernel", "bm", "bk", "bn"]
# What jax's source says the Mosaic IR version that doubled the requests changed: jax-ml/jax commit
# 588c281273 (2025-11-03, first in jaxlib 0.8.1), "[Mosaic TPU] No longer implicitly trigger
# single-buffering when running out of VMEM", raises kVersion from 8 to 9 in
# jaxlib/mosaic/dialect/tpu/transforms/serde.cc "so that the old artifacts still get the relaxed
# treatment" (and keeps the version attribute on the deserialised module for the compiler to read).
# The fallback itself is libtpu's, whose source is not public.
SOURCE = dict(version=9, commit="588c281273", file="jaxlib/mosaic/dialect/tpu/transforms/serde.cc")
COMPILED = ("ok", "vmem_oom")  # statuses with the compiler's requested bytes


def read(folder: Path = DATA) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """The two tables, or None for one that is not there (the study has not been run)."""
    paths = folder / "mechanism.csv", folder / "mechanism_ir_version.csv"
    text = {"jax": str, "libtpu": str, "ir_version": str, "chosen_ir_version": str}
    return tuple(pd.read_csv(p, dtype=text) if p.exists() else None for p in paths)


def _bytes(table: pd.DataFrame, pair: dict, blocks: tuple) -> float | None:
    rows = table[(table.jax == pair["jax"]) & (table.libtpu == pair["libtpu"])
                 & (table[BLOCKS].apply(tuple, axis=1) == blocks)]
    if len(rows) != 1 or rows.iloc[0].status not in COMPILED or pd.isna(rows.iloc[0].vmem_bytes):
        return None
    return float(rows.iloc[0].vmem_bytes)


def same(a: float, b: float) -> bool:
    return abs(a - b) <= SAME_TOLERANCE * max(a, b)


def block_bytes(kernel_blocks: tuple, dtype: str) -> float:
    """One buffer of each of a configuration's blocks (its two inputs' and its output's)."""
    _, bm, bk, bn = kernel_blocks
    return float((bm * bk + bk * bn + bm * bn) * np.dtype(dtype).itemsize)


def per_configuration(mechanism: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration: the four pairs' bytes, whether its buffers doubled, and which component."""
    rows = []
    for blocks in mechanism[BLOCKS].drop_duplicates().itertuples(index=False, name=None):
        b, a = _bytes(mechanism, BEFORE, blocks), _bytes(mechanism, AFTER, blocks)
        jax_cross, libtpu_cross = _bytes(mechanism, NEW_JAX, blocks), _bytes(mechanism, NEW_LIBTPU, blocks)
        dtypes = set(mechanism[mechanism[BLOCKS].apply(tuple, axis=1) == blocks].dtype)
        one = block_bytes(blocks, dtypes.pop()) if len(dtypes) == 1 else None
        component = None
        doubled = (None not in (b, a, one) and 0 <= b - one <= ONE_BUFFER_EXTRA * b
                   and abs(a - 2 * one) <= DOUBLED_TOLERANCE * a)
        if doubled and None not in (jax_cross, libtpu_cross):
            kept = same(jax_cross, b), same(libtpu_cross, b)
            doubles = same(jax_cross, a), same(libtpu_cross, a)
            component = {(True, True): "neither alone"}.get(kept) or {(True, False): "jax",
                                                                       (False, True): "libtpu"}.get(doubles)
        rows.append(dict(zip(BLOCKS, blocks, strict=True), one_buffer=one, before=b, after=a,
                         new_jax=jax_cross, new_libtpu=libtpu_cross, doubled=doubled, component=component))
    return pd.DataFrame(rows)


def first_doubling_version(versions: pd.DataFrame, blocks: tuple, before: float, after: float) -> int | None:
    """The Mosaic IR version from which the after pair's request doubles (see the module's rule)."""
    rows = versions[(versions.jax == AFTER["jax"]) & (versions.libtpu == AFTER["libtpu"])
                    & (versions[BLOCKS].apply(tuple, axis=1) == blocks) & (versions.ir_version != "default")
                    & versions.status.isin(COMPILED)]
    found = {int(v): float(b) for v, b in zip(rows.ir_version, rows.vmem_bytes, strict=True)}
    for version in sorted(found):
        below = [found[v] for v in found if v < version]
        rest = [found[v] for v in found if v >= version]
        if below and all(same(x, before) for x in below) and all(same(x, after) for x in rest):
            return version
    return None


def mib(value: float) -> str:
    return f"{value / MiB:.2f}"


def blocks_text(row) -> str:
    return f"({int(row.bm)}, {int(row.bk)}, {int(row.bn)})"


def listed(items: list[str], gettext) -> str:
    """'a and b' in the reader's language (each language's own conjunction and punctuation)."""
    out = items[0]
    for item in items[1:]:
        out = gettext("%(first)s and %(second)s") % dict(first=out, second=item)
    return out


def sentences(mechanism: pd.DataFrame | None, versions: pd.DataFrame | None, gettext) -> list[str]:
    """The section's sentences; none when the data do not make the rule's conclusion."""
    if mechanism is None or mechanism.empty:
        return []
    table = per_configuration(mechanism)
    if not table.doubled.all() or set(table.component) != {"neither alone"}:
        return []
    split = table[table.kernel == "v2"]
    blocked = table[table.kernel == "v3"]
    if len(split) != 1 or blocked.empty:
        return []
    v2 = split.iloc[0]
    out = [gettext(
        "Neither component alone doubled the blocks' buffers. The post's v2 at 2048 asks for %(before)s MiB "
        "with jax 0.8.0 and libtpu 0.0.24 (one buffer of each block, %(one)s MiB, and %(extra)s MiB more) "
        "and %(after)s MiB with jax 0.8.1 and libtpu 0.0.30 (two buffers of each block), but "
        "%(new_jax)s MiB with jax 0.8.1 and libtpu 0.0.24, and %(new_libtpu)s MiB with jax 0.8.0 and "
        "libtpu 0.0.30; v4's blocks %(blocks)s behave alike (%(blocked_before)s MiB, doubled to "
        "%(blocked_after)s MiB only by jax 0.8.1 with libtpu 0.0.30).") % dict(
        before=mib(v2.before), one=mib(v2.one_buffer), extra=mib(v2.before - v2.one_buffer),
        after=mib(v2.after), new_jax=mib(v2.new_jax), new_libtpu=mib(v2.new_libtpu),
        blocks=listed([blocks_text(r) for r in blocked.itertuples()], gettext),
        blocked_before=listed([mib(r.before) for r in blocked.itertuples()], gettext),
        blocked_after=listed([mib(r.after) for r in blocked.itertuples()], gettext))]
    if versions is None or versions.empty:
        return out
    found = [first_doubling_version(versions, tuple(getattr(r, b) for b in BLOCKS), r.before, r.after)
             for r in table.itertuples()]
    if len(set(found)) != 1 or found[0] is None:
        return out
    version = found[0]
    if not _gated(versions, version):
        return out
    out.append(gettext(
        "The request doubled with Mosaic IR version %(version)s, the version jaxlib serialises the kernel "
        "at, which needs both sides of the step: jax 0.8.1 with libtpu 0.0.30 asks for %(before)s MiB for "
        "v2 when made to write version %(below)s and %(after)s MiB at version %(version)s, its own choice; "
        "jaxlib 0.8.0 cannot write version %(version)s, libtpu 0.0.24 cannot read it, and jax 0.8.1 "
        "writes version %(below)s for libtpu 0.0.24.") % dict(
        before=mib(v2.before), after=mib(v2.after), version=version, below=version - 1))
    if version == SOURCE["version"] and _out_of_vmem_from(versions, version):
        out.append(gettext(
            "What version %(version)s changed is in jax's source: commit %(commit)s (%(file)s, version "
            "%(below)s to %(version)s), \"No longer implicitly trigger single-buffering when running out of "
            "VMEM\". A kernel serialised at an older version still falls back to one buffer per block "
            "when two do not fit the scoped-VMEM limit; at version %(version)s it runs out of VMEM instead, "
            "unless its BlockSpecs ask for one buffer (pipeline_mode=pl.Buffered(1)). The fallback itself "
            "is libtpu's, whose source is not public.") % dict(SOURCE, below=version - 1))
    return out


def _out_of_vmem_from(versions: pd.DataFrame, version: int) -> bool:
    """Whether the after pair's compiles run out of VMEM at `version` and fit below it, for every
    configuration: what the commit behind `version` says (SOURCE), seen in the data."""
    after = _pair(versions, AFTER)
    at = after[after.ir_version == str(version)]
    below = after[after.ir_version.isin([str(v) for v in range(version)])]
    return (not at.empty and (at.status == "vmem_oom").all() and not below.empty
            and (below.status == "ok").all())


def _pair(versions: pd.DataFrame, pair: dict) -> pd.DataFrame:
    return versions[(versions.jax == pair["jax"]) & (versions.libtpu == pair["libtpu"])]


def _gated(versions: pd.DataFrame, version: int) -> bool:
    """Whether the IR-version table shows `version` needs both components: the after pair picks it
    itself (its default compiles give the doubled bytes of its forced `version`), jaxlib 0.8.0 refuses
    to write it, libtpu 0.0.24 refuses to read it, and jax 0.8.1 picks `version` - 1 for libtpu
    0.0.24."""
    after = _pair(versions, AFTER)
    forced = after[after.ir_version == str(version)].set_index(BLOCKS).vmem_bytes
    default = after[after.ir_version == "default"].set_index(BLOCKS).vmem_bytes
    if forced.empty or not default.sort_index().equals(forced.sort_index()):
        return False
    old_jaxlib = versions[(versions.jax == BEFORE["jax"]) & (versions.ir_version == str(version))]
    new_jax = _pair(versions, NEW_JAX)
    refused = new_jax[new_jax.ir_version == str(version)]
    chosen = set(new_jax[new_jax.ir_version == "default"].chosen_ir_version.astype(str))
    return (not old_jaxlib.empty and old_jaxlib.error.str.contains(
                f"highest supported version is {version - 1} but requested serialization at version "
                f"{version}").all()
            and not refused.empty and refused.error.str.contains(f"Unsupported version: expected <= "
                                                                 f"{version - 1} but got {version}").all()
            and chosen == {str(version - 1)})


