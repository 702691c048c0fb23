"""Write ../data/releases.csv from the package index (pip index, pip download of each jax wheel):
    python3 studies/history/tools/list_releases.py [--first 0.4.36] [--last 0.10.2] [--out FILE]
"""
import argparse
import datetime
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from packaging.version import Version

from tpu_matmul_repro.experiments.plan.config import load_yaml
from tpu_matmul_repro.studies.history import releases

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]  # the repository: its config and requirements.txt


def pip(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "pip", *args, "--disable-pip-version-check"],
                          capture_output=True, text=True, check=True)
    return done.stdout


def index_versions(package: str) -> list[str]:
    """The versions of `package` the index offers for this Python and platform (pip index versions)."""
    found = re.search(r"^Available versions: (.*)$", pip("index", "versions", package), re.MULTILINE)
    return [v.strip() for v in found.group(1).split(",")] if found else []


def wheel_facts(wheel: Path) -> tuple[str, str, str]:
    """(METADATA text, build date of jax/version.py, jax's git commit or "") of a jax wheel."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        version_py = z.getinfo("jax/version.py")
        source = z.read(version_py).decode()
        commit = re.search(r"^_git_hash: str = '([0-9a-f]+)'", source, re.MULTILINE)
        date = datetime.date(*version_py.date_time[:3]).isoformat()
        return z.read(meta).decode(), date, commit.group(1) if commit else ""


def defaults() -> tuple[str, str | None]:
    """The post toolchain's jax, and None: the newest jax on the index."""
    config = load_yaml(ROOT / "config" / "config.yaml")
    return config["toolchains"]["post"]["pins"]["jax"], None


def main() -> None:
    first, last = defaults()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first", default=first)
    parser.add_argument("--last", default=last)
    parser.add_argument("--out", default=str(HERE.parent / "data" / "releases.csv"))
    args = parser.parse_args()
    on_index = {p: set(index_versions(p)) for p in ("jaxlib", "libtpu")}
    jax_versions = index_versions("jax")
    args.last = args.last or max(jax_versions, key=Version)
    found = []
    with tempfile.TemporaryDirectory() as tmp:
        for version in releases.between(jax_versions, args.first, args.last):
            pip("download", "--no-deps", "--only-binary=:all:", "--quiet", "-d", tmp, f"jax=={version}")
            metadata, date, commit = wheel_facts(next(Path(tmp).glob(f"jax-{version}-*.whl")))
            release = releases.release_from_metadata(version, metadata, on_index=on_index, jax_date=date,
                                                     jax_commit=commit)
            print(f"{release.describe()} ({date}){'' if release.installable else ': ' + release.note}")
            found.append(release)
    header = (f"jax releases {args.first} to {args.last}, each with the jaxlib and libtpu its [tpu] extra "
              "pins:\n"
              "the highest version each requirement allows on the index (what pip install 'jax[tpu]==X'\n"
              f"installs). Written by tools/list_releases.py on {datetime.date.today().isoformat()} from the "
              "jax wheels' METADATA\n(pip download --no-deps jax==X) and `pip index versions` of jaxlib and "
              f"libtpu (Python {sys.version_info.major}.{sys.version_info.minor},\nLinux x86-64). jax_date: "
              "the wheel's build date (its files' timestamps); jax_commit: jax's git commit\nwhere the wheel "
              "records it; installable=false: skipped by the history, the note says why.")
    releases.write(found, args.out, header)
    print(f"wrote {args.out}: {len(found)} releases, {sum(r.installable for r in found)} installable")


if __name__ == "__main__":
    main()
