"""Where the test suite's time goes, worker by worker, from `TEST_TIMELINE=file pytest`'s file:
`python3 tools/test_timeline.py FILE [--longer-than 8]` (docs/development.md, "Tests and CI").
"""
import argparse
import json
from collections import Counter, defaultdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("timeline")
    parser.add_argument("--longer-than", type=float, default=8.0,
                        help="seconds; shorter phases are only summed")
    args = parser.parse_args()
    phases = [json.loads(line) for line in open(args.timeline)]
    t0 = min(p["end"] - p["seconds"] for p in phases)
    by_worker = defaultdict(list)
    for p in phases:
        by_worker[p["worker"]].append(p)
    for worker, mine in sorted(by_worker.items()):
        mine.sort(key=lambda p: p["end"])
        start, end = mine[0]["end"] - mine[0]["seconds"] - t0, mine[-1]["end"] - t0
        tests = {p["test"] for p in mine}
        print(f"{worker}: {len(tests)} tests from {start:.0f} s to {end:.0f} s, "
              f"{sum(p['seconds'] for p in mine):.0f} s in them, {cpu(mine):.0f} CPU-s")
        for p in mine:
            if p["seconds"] >= args.longer_than:
                began = p["end"] - p["seconds"] - t0
                print(f"  {began:6.0f} s  {p['seconds']:5.1f} s  {p.get('cpu') or 0:5.1f} CPU-s  "
                      f"{p['phase']:8} {p['test']}")
    by_file = Counter()
    for p in phases:
        by_file[p["test"].split("::")[0]] += p.get("cpu") or 0
    print(f"CPU-s by file ({cpu(phases):.0f} in all):")
    for name, seconds in by_file.most_common():
        print(f"  {seconds:6.1f}  {name}")


def cpu(phases) -> float:
    """CPU seconds of the phases: the worker's own and its finished subprocesses' (None in a file
    written before the timeline counted CPU)."""
    return sum(p.get("cpu") or 0 for p in phases)


if __name__ == "__main__":
    main()
