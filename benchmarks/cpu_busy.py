"""CPUs busy over time from /proc/stat (Linux): `record samples.txt` one line a second until
interrupted; `summary samples.txt 12:17:44 12:22:04 [--window 10]` busy, idle and steal per window.
"""
import argparse
import datetime
import gzip
import re
import time
from pathlib import Path


def record(path: Path) -> None:
    with open(path, "a") as out:
        while True:
            stat = Path("/proc/stat").read_text().splitlines()
            cpus = [line for line in stat if re.match(r"cpu\d+ ", line)]
            out.write(f"{int(time.time())} {' '.join(cpus)}\n")
            out.flush()
            time.sleep(1)


def jiffies(fields) -> tuple[int, int, int]:
    """(busy, stolen, total) from the numbers of one /proc/stat cpu line."""
    user, nice, system, idle, iowait, irq, softirq, steal = map(int, fields[:8])
    busy = user + nice + system + irq + softirq
    return busy, steal, busy + idle + iowait + steal


def parse(path: Path) -> list[tuple[int, list[tuple[int, int, int]]]]:
    """[(epoch, [(busy, stolen, total) jiffies per CPU])]."""
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    per_cpu = re.compile(r"cpu\d+ ([\d ]+)")
    return [(int(line.split()[0]), [jiffies(numbers.split()) for numbers in per_cpu.findall(line)])
            for line in text.splitlines()]


def cpus_busy(a, b) -> tuple[float, float]:
    """(CPUs busy, CPUs stolen) on average between two samples."""
    busy = stolen = 0.0
    for (b0, s0, t0), (b1, s1, t1) in zip(a[1], b[1], strict=True):
        total = max(1, t1 - t0)
        busy, stolen = busy + (b1 - b0) / total, stolen + (s1 - s0) / total
    return busy, stolen


def summary(path: Path, start: str, end: str, window: int) -> str:
    rows = parse(path)
    day = datetime.datetime.fromtimestamp(rows[0][0], datetime.timezone.utc).date()

    def epoch(clock: str) -> int:
        moment = datetime.datetime.combine(day, datetime.time.fromisoformat(clock), datetime.timezone.utc)
        return int(moment.timestamp())

    chosen = [r for r in rows if epoch(start) <= r[0] <= epoch(end)]
    lines = [f"{len(chosen)} samples, {start}-{end} UTC; CPUs busy (stolen) per {window}-second window:"]
    for a, b in zip(chosen[::window], chosen[window::window], strict=False):
        busy, stolen = cpus_busy(a, b)
        when = datetime.datetime.fromtimestamp(a[0], datetime.timezone.utc).strftime("%H:%M:%S")
        lines.append(f"{when} {busy:.2f} ({stolen:.2f})")
    busy, stolen = cpus_busy(chosen[0], chosen[-1])
    lines.append(f"mean over the stretch: {busy:.2f} busy, {stolen:.2f} stolen")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("record").add_argument("path", type=Path)
    s = sub.add_parser("summary")
    s.add_argument("path", type=Path)
    s.add_argument("start")
    s.add_argument("end")
    s.add_argument("--window", type=int, default=10)
    args = parser.parse_args()
    if args.command == "record":
        record(args.path)
    else:
        print(summary(args.path, args.start, args.end, args.window))


if __name__ == "__main__":
    main()
