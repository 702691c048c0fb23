"""Progress lines on stderr while the advisor works, so that a call is never silent: after FIRST_S, a
line every EVERY_S and at each new search, and one at the end of a call that printed any."""
import dataclasses
import sys
import threading
import time

from tpu_matmul_repro.experiments.compile_study import cache
from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.experiments.core.runtime import duration

FIRST_S = 2.0  # a call done sooner prints no progress at all
EVERY_S = 10.0  # at most this long between two lines
PREFIX = "advise: "


@dataclasses.dataclass
class Search:
    """The search under way: one shape on one target."""

    what: str  # "v6e 4096x4096x4096 float32"
    candidates: int
    out_of_vmem: int  # by their blocks' buffers alone: never compiled
    configurations: int  # the candidates to bound or compile, and XLA's compiles
    done: int = 0


def caching() -> bool:
    return cache.cache_root() is not None


class Reporter:
    """The call's progress, told on `stream` from a thread of its own (the compiles block the main one)."""

    def __init__(self, stream=None, deadline: float | None = None, clock=time.monotonic):
        self.stream = stream if stream is not None else sys.stderr
        self.deadline, self.clock = deadline, clock
        self.start = clock()
        self.phase = "reading the request"
        self.search: Search | None = None
        self.printed = 0
        self.done = 0  # configurations done, all searches together
        self._last = -float("inf")
        self._changed = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        # not a daemon: one cut off at exit in the middle of a line aborts the interpreter
        self._thread = threading.Thread(target=self._run, name="advise-progress")
        self._compiles0 = dict(cache.TOTALS)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def fitting(self) -> None:
        self._set(f"fitting the timing model on the post's published {POST_CHIP} numbers (once: the "
                  "advisor's cache keeps it)", None)

    def searching(self, search: Search, index: int, total: int) -> None:
        where = f" (search {index} of {total})" if total > 1 else ""
        self._set(f"{search.what}{where}", search)

    def done_one(self) -> None:
        """A configuration compiled (or answered from the cache): workers.Workers' on_done."""
        with self._lock:
            self.done += 1
            if self.search:
                self.search.done += 1

    def finish(self, summary: str) -> None:
        """The last line, where the call printed progress (or took longer than FIRST_S)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self.printed or self.clock() - self.start >= FIRST_S:
            hits, _ = self._compiles()
            cached = f", {hits} compiles from the compile cache" if caching() else ""
            self._say(f"done: {summary}; {self.done} configurations done{cached}")

    def _set(self, phase: str, search: Search | None) -> None:
        with self._lock:
            self.phase, self.search, self._changed = phase, search, True

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            now = self.clock()
            if now - self.start < FIRST_S:
                continue
            if now - self._last >= EVERY_S or (self._changed and now - self._last >= FIRST_S):
                self._say(self.line())

    def line(self) -> str:
        with self._lock:
            phase, search, self._changed = self.phase, self.search, False
        hits, misses = self._compiles()
        if not search:
            cached = f"; {hits + misses} compiles so far, {hits} from the compile cache" if caching() else ""
            return f"{phase}{cached}"
        words = [f"{phase}: {search.candidates} candidate blocks, {search.out_of_vmem} out of VMEM by their "
                 f"blocks alone", f"{search.done} of up to {search.configurations} configurations done"
                 + (f", {hits} compiles from the compile cache" if caching() else "")]
        if self.deadline is not None:
            left = self.deadline - self.clock()
            words.append(f"time budget: {duration(left)} left" if left > 0 else
                         "time budget spent: answering with what is compiled")
        return "; ".join(words)

    def _compiles(self) -> tuple[int, int]:
        """(compile cache hits, misses) since the call began."""
        return tuple(cache.TOTALS[k] - self._compiles0[k] for k in ("hits", "misses"))

    def _say(self, text: str) -> None:
        self._last = self.clock()
        self.printed += 1
        try:
            print(f"{PREFIX}{duration(self._last - self.start)}: {text}", file=self.stream, flush=True)
        except (OSError, ValueError):  # a closed stderr: the answer matters more than the progress
            pass
