"""Keep full garbage collections from pausing a VERL worker's event loop, when asked.

A VERL worker process holds the objects of torch, transformers, VERL, Ray and the
graders: about 670,000 in the reward benchmark's process. CPython's full collection
walks every one of them (~0.26 s on this 2-core machine), and while it runs the event
loop reads no judge reply and starts no call. A step of 1,024 trajectories x 2 judges
triggered one or two such pauses (``python -m bench.verl step``, in-process judge:
1.33x the ideal step with them, 1.13-1.14x without).

Those objects live as long as the process, so once the graders are built they are
collected once and then moved out of the collector's way (:func:`gc.freeze`); what the
worker allocates afterwards (rows, calls, results) is collected as usual. Objects
frozen here are never freed by the cycle collector, which is why the collection comes
first.

Off unless ``OPENJUDGE_GC_FREEZE=1`` is in the workers' environment: the reward worker
processes are VERL's (its ``RewardLoopWorker`` actors, or the trainer's own process),
and freezing changes their collector for good, for VERL's objects as much as ours. A
library changes no process-wide state of its host unasked; the user who owns the
training run may ask.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time

__all__ = ["GC_FREEZE_ENV", "freeze_long_lived_objects"]

GC_FREEZE_ENV = "OPENJUDGE_GC_FREEZE"

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_frozen = False


def freeze_long_lived_objects() -> bool:
    """Collect, then freeze every object this process holds; once per process.

    Returns:
        Whether this call froze them (``False``: already done, or not asked for with
        ``OPENJUDGE_GC_FREEZE=1``).
    """
    global _frozen
    if os.environ.get(GC_FREEZE_ENV, "").strip().lower() not in {"1", "true", "yes", "on"}:
        return False
    with _lock:
        if _frozen:
            return False
        _frozen = True
        start = time.perf_counter()
        gc.collect()
        gc.freeze()
    logger.info(
        "openjudge: %d long-lived objects moved out of the garbage collector's full passes (%.2fs; asked by %s)",
        gc.get_freeze_count(),
        time.perf_counter() - start,
        GC_FREEZE_ENV,
    )
    return True
