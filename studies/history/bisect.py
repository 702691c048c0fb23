"""Bisection of a release list for the first release where one configuration's VMEM changed, every probe
recorded, whether they fit one step said (`one_step`), releases without an answer skipped and named.
"""
import dataclasses
from typing import Callable

VERDICTS = ("ok", "vmem_oom")  # statuses that carry a VMEM figure


@dataclasses.dataclass(frozen=True)
class Answer:
    """What one release's compiler said about one configuration."""

    status: str  # ok, vmem_oom, compile_error, timeout, toolchain_error (not installable)
    vmem_bytes: int | None = None
    error: str = ""

    @property
    def usable(self) -> bool:
        return self.status in VERDICTS and self.vmem_bytes is not None

    @property
    def value(self) -> tuple:
        return (self.status, self.vmem_bytes)


@dataclasses.dataclass
class Finding:
    """The bisection's result over releases 0..n-1 (indices into the release list)."""

    before: Answer  # the first release's
    after: Answer  # the last release's
    first_changed: int | None  # the first probed release whose value differs from `before`
    last_unchanged: int | None  # the last probed release with `before`'s value before it
    untested_between: list[int]  # releases between the two that gave no answer
    probed: dict[int, Answer]  # every release this configuration's bisection looked at
    one_step: bool | None  # the probed values are consistent with a single change
    note: str = ""

    @property
    def exact(self) -> bool:
        """The first changed release is named exactly: its predecessor was probed and unchanged."""
        return self.first_changed is not None and self.first_changed - self.last_unchanged == 1


def candidates(lo: int, hi: int) -> list[int]:
    """Releases strictly between lo and hi, the middle first, then outwards."""
    mid = (lo + hi) // 2
    inside = range(lo + 1, hi)
    return sorted(inside, key=lambda i: (abs(i - mid), i))


def bisect(n: int, answer: Callable[[int], Answer]) -> Finding:
    """The first of releases 0..n-1 where `answer` (release index -> Answer) differs from release 0's."""
    probed: dict[int, Answer] = {}

    def ask(i: int) -> Answer:
        if i not in probed:
            probed[i] = answer(i)
        return probed[i]

    before, after = ask(0), ask(n - 1)
    if not (before.usable and after.usable):
        return Finding(before, after, None, None, [], probed, None,
                       note="an endpoint gave no VMEM figure: nothing to bisect")
    if before.value == after.value:
        return Finding(before, after, None, None, [], probed, None, note="no change between the endpoints")
    lo, hi = 0, n - 1  # invariant: lo gives before's value, hi a different one
    while hi - lo > 1:
        usable = next((i for i in candidates(lo, hi) if ask(i).usable), None)
        if usable is None:  # every release between them failed to answer
            break
        if ask(usable).value == before.value:
            lo = usable
        else:  # after's value, or a third one: either way it has changed by here
            hi = usable
    untested = [i for i in range(lo + 1, hi) if not probed.get(i, Answer("untested")).usable]
    values = {i: a.value for i, a in probed.items() if a.usable}
    one_step = all(v == (before.value if i < hi else after.value) for i, v in values.items())
    notes = []
    if not one_step:
        third = sorted({v for v in values.values()} - {before.value, after.value})
        notes.append("not one step: probed values "
                     + (f"include {', '.join(f'{s} {b}' for s, b in third)}, neither endpoint's"
                        if third else "go back and forth between the endpoints'"))
    if untested:
        notes.append(f"{len(untested)} release(s) between the last unchanged and the first changed gave no "
                     "VMEM figure: the change happened in one of them or in the first changed")
    return Finding(before, after, hi, lo, untested, probed, one_step, note="; ".join(notes))
