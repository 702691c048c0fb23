"""Run the advisor examples of docs/advisor.md (`--results none`) and paste their outputs there, between
its markers, with the commit and date: `python3 tools/advisor_examples.py [--docs docs/advisor.md]`.
"""
import argparse
import datetime
import os
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
START, END = "<!-- advisor-examples:start -->", "<!-- advisor-examples:end -->"
EXAMPLES = (  # (what it shows, the command)
    ("An MLP projection of a 4096-wide model with a 14336 MLP, on v6e:",
     "advise 8192x4096x14336 --target v6e --results none"),
    ("The same at a raised scoped-VMEM limit, which admits larger blocks:",
     "advise 8192x4096x14336 --target v6e --vmem-limit 64MiB --results none"),
    ("A float32 square on v6e:",
     "advise 4096x4096x4096 --dtype float32 --target v6e --results none"),
    ("Decode (16 tokens): bandwidth-bound, in % of HBM bandwidth:",
     "advise 16x4096x14336 --target v5e --results none"),
    ("A shape no block edge divides, on v5e:",
     "advise 8205x2949x5921 --target v5e --results none"),
    ("On 7x:",
     "advise 8192x4096x14336 --target 7x --results none"),
    ("A whole model:",
     "advise --model llama3-8b --tokens 8192 --target v5e --results none"),
)


def run(command: str) -> str:
    argv = [str(Path(sys.executable).with_name("advise")), *shlex.split(command)[1:]]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, env=dict(os.environ))
    if done.returncode:
        raise SystemExit(f"{command} exited with {done.returncode}: {done.stderr.strip()[-400:]}")
    return done.stdout.rstrip()


def section() -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.strip()
    stamp = f"{commit}{'-dirty' if dirty else ''}, {datetime.date.today().isoformat()}"
    out = [START, "", f"Real runs at commit {stamp} (`python3 tools/advisor_examples.py` writes this"
                      " section);"
                      " every number is modelled from libtpu's deviceless compiles, none measured.", ""]
    for what, command in EXAMPLES:
        print(f"running: {command}", file=sys.stderr)
        out += [what, "", "```", f"$ {command}", run(command), "```", ""]
    return "\n".join(out + [END])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=REPO / "docs" / "advisor.md")
    args = parser.parse_args(argv)
    text = args.docs.read_text()
    if text.count(START) != 1 or text.count(END) != 1:
        raise SystemExit(f"{args.docs}: expected one {START} and one {END}")
    head, rest = text.split(START)
    _, tail = rest.split(END)
    args.docs.write_text(head + section() + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
