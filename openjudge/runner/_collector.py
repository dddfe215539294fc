"""The garbage collector's young threshold while grading runs are in flight: see
:func:`batch_collector`."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_THRESHOLD", "batch_collector"]

YOUNG_THRESHOLD = 10_000
"""Net allocations between young collections while a run is active (CPython's default: 700)."""


class _Raised:
    """How many runs are active, and the thresholds to put back when the last one ends."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # a sync run drives its loop in another thread
        self.active = 0
        self.found: tuple[int, int, int] | None = None
        self.ours: tuple[int, int, int] | None = None

    def enter(self) -> None:
        with self.lock:
            self.active += 1
            if self.active > 1:
                return
            found = gc.get_threshold()
            if gc.isenabled() and 0 < found[0] < YOUNG_THRESHOLD:
                self.found, self.ours = found, (YOUNG_THRESHOLD, found[1], found[2])
                gc.set_threshold(*self.ours)

    def exit(self) -> None:
        with self.lock:
            self.active -= 1
            if self.active > 0 or self.found is None:
                return
            if gc.get_threshold() == self.ours:
                gc.set_threshold(*self.found)
            self.found = self.ours = None


_RAISED = _Raised()


@contextmanager
def batch_collector() -> Iterator[None]:
    """Raise the collector's young threshold to at least :data:`YOUNG_THRESHOLD` for the block.

    Why: a run keeps every result (each a few container objects) while hundreds of calls
    wait on the judge. CPython collects its young generation whenever allocations outnumber
    deallocations by 700, so the kept results start a collection every hundred calls or so,
    and each collection scans the young objects of every call in flight (aiohttp's and
    ours). At 256 calls in flight that is 60-90 µs of CPU per judge call over HTTP, about 15%
    of all of it; a young threshold of 10,000 brings it to about 10 µs (``python -m
    bench.runner ratios`` prints both). Cycles are still collected, in fewer, larger batches:
    the young generation holds at most ~10,000 more objects, and one collection takes ~15 ms
    instead of ~5.

    The thresholds are the whole process's, so the library never raises them unasked: a
    runner does with ``tune_collector=True``, which ``openjudge run`` sets in the processes
    it owns (its own, and its Ray workers'). Use it in a process of your own; inside a host
    (a trainer's worker) it is the host's call.

    Blocks may overlap, in any thread: the threshold stays raised while at least one is
    active, and the last to end puts back the thresholds the first found. A threshold
    already higher, or a collector whose automatic runs are off, is left alone, and
    thresholds someone changed during the blocks are theirs to keep.
    """
    _RAISED.enter()
    try:
        yield
    finally:
        _RAISED.exit()
