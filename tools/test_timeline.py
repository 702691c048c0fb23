"""Where the test suite's time goes, worker by worker: read the file that `TEST_TIMELINE=file pytest`
writes (tests/conftest.py) and print each worker's span, its busy time, and its long phases in the order
they ran, with their start times. A long `setup` of a test that shares a session fixture (the tiny run)
is a worker waiting for the other to make it.

    TEST_TIMELINE=/tmp/timeline.jsonl python3 -m pytest
    python3 tools/test_timeline.py /tmp/timeline.jsonl --longer-than 8
"""
import argparse
import json
from collections import defaultdict


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
              f"{sum(p['seconds'] for p in mine):.0f} s in them")
        for p in mine:
            if p["seconds"] >= args.longer_than:
                began = p["end"] - p["seconds"] - t0
                print(f"  {began:6.0f} s  {p['seconds']:5.1f} s  {p['phase']:8} {p['test']}")


if __name__ == "__main__":
    main()
