"""The jax releases between two toolchains, each with the jaxlib and libtpu its `[tpu]` extra pins
(what a user of it got on a TPU host), read from data/releases.csv (tools/list_releases.py wrote it).
"""
import csv
import dataclasses
import io
import re

from packaging.specifiers import SpecifierSet
from packaging.version import Version

# A `Requires-Dist: NAME SPECIFIER; extra == "tpu"` line of a wheel's METADATA.
_TPU_REQUIREMENT = re.compile(r'^Requires-Dist:\s*([A-Za-z0-9_.\-]+)\s*([^;]*);\s*extra\s*==\s*"tpu"\s*$',
                              re.MULTILINE)
COLUMNS = ("jax", "jaxlib", "libtpu", "jaxlib_requirement", "libtpu_requirement", "jax_date", "jax_commit",
           "installable", "note")


@dataclasses.dataclass(frozen=True)
class Release:
    jax: str
    jaxlib: str | None  # None: the extra pins no single jaxlib
    libtpu: str | None  # None: the extra pins no libtpu release (e.g. only libtpu-nightly)
    jaxlib_requirement: str = ""  # as the extra states it, e.g. ">=0.4.36,<=0.4.37"
    libtpu_requirement: str = ""  # e.g. "==0.0.10.*"
    jax_date: str = ""  # the jax wheel's build date (its files' timestamps), YYYY-MM-DD
    jax_commit: str = ""  # jax's git commit, where the wheel records it (jax/version.py)
    installable: bool = True
    note: str = ""  # why it is not installable, or what else its extra pins

    @property
    def name(self) -> str:
        """The release's name in file names and logs, e.g. jax-0.4.36."""
        return f"jax-{self.jax}"

    def pins(self) -> dict[str, str]:
        return {"jax": self.jax, "jaxlib": self.jaxlib, "libtpu": self.libtpu}

    def describe(self) -> str:
        return f"jax {self.jax}, jaxlib {self.jaxlib}, libtpu {self.libtpu}"


def resolve(requirement: str, available) -> str | None:
    """The highest release in `available` that `requirement` allows (as pip picks it), None if none."""
    allowed = [v for v in SpecifierSet(requirement).filter(available, prereleases=False)]
    return max(allowed, key=Version) if allowed else None


def tpu_extra(metadata: str) -> dict[str, str]:
    """{package: specifier} of the `[tpu]` extra in a wheel's METADATA text."""
    return {name.lower().replace("_", "-"): spec.strip().strip("()")
            for name, spec in _TPU_REQUIREMENT.findall(metadata)}


def release_from_metadata(jax_version: str, metadata: str, *, on_index: dict[str, set[str]],
                          jax_date: str = "", jax_commit: str = "") -> Release:
    """The release of jax `jax_version` from its METADATA: the highest jaxlib and libtpu its `[tpu]` extra
    allows among `on_index` (the versions offered here); none allowed: kept, not installable, with why."""
    extra = tpu_extra(metadata)
    notes, problems, chosen = [], [], {}
    for package in ("jaxlib", "libtpu"):
        requirement = extra.get(package)
        if requirement is None:
            problems.append(f"its [tpu] extra names no {package}"
                            + (f" (only libtpu-nightly{extra['libtpu-nightly']})"
                               if package == "libtpu" and "libtpu-nightly" in extra else ""))
            continue
        chosen[package] = resolve(requirement, on_index.get(package, ()))
        if chosen[package] is None:
            problems.append(f"no {package} on the package index for this platform matches {requirement}")
    if "libtpu-nightly" in extra:
        notes.append(f"its extra also pins libtpu-nightly{extra['libtpu-nightly']} (not installed)")
    return Release(jax=jax_version, jaxlib=chosen.get("jaxlib"), libtpu=chosen.get("libtpu"),
                   jaxlib_requirement=extra.get("jaxlib", ""), libtpu_requirement=extra.get("libtpu", ""),
                   jax_date=jax_date, jax_commit=jax_commit, installable=not problems,
                   note="; ".join(problems + notes))


def between(versions, first: str, last: str) -> list[str]:
    """The released versions from `first` to `last`, both included, oldest first (no pre-releases)."""
    lo, hi = Version(first), Version(last)
    chosen = [v for v in versions if lo <= Version(v) <= hi and not Version(v).is_prerelease]
    return sorted(set(chosen), key=Version)


def write(releases: list[Release], path, header: str) -> None:
    """data/releases.csv: `header` as # comments (where the list came from), then one row per release."""
    from tpu_matmul_repro.experiments.core.atomic_write import write_text_atomic

    out = io.StringIO()
    for line in header.strip().splitlines():
        out.write(f"# {line}\n")
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in releases:
        writer.writerow({**dataclasses.asdict(r), "jaxlib": r.jaxlib or "", "libtpu": r.libtpu or "",
                         "installable": str(r.installable).lower()})
    write_text_atomic(out.getvalue(), path)


def read(path) -> list[Release]:
    """The releases of data/releases.csv, oldest first."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    releases = [Release(jax=r["jax"], jaxlib=r["jaxlib"] or None, libtpu=r["libtpu"] or None,
                        jaxlib_requirement=r["jaxlib_requirement"],
                        libtpu_requirement=r["libtpu_requirement"],
                        jax_date=r["jax_date"], jax_commit=r["jax_commit"],
                        installable=r["installable"] == "true", note=r["note"]) for r in rows]
    return sorted(releases, key=lambda r: Version(r.jax))


def probed(releases: list[Release]) -> list[Release]:
    """The releases the history compiles: the list without the not installable ones at its end (kept only to
    say so); indices into it are indices into the full list."""
    end = len(releases)
    while end and not releases[end - 1].installable:
        end -= 1
    return releases[:end]
