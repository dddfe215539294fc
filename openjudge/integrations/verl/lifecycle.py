"""Closing what the integration builds (providers, in-process models, the judge cache).

VERL gives its workers no end-of-life hook: ``RewardLoopWorker`` and the agent-loop
workers are Ray actors with no ``shutdown``/``close`` method, and Ray ends an actor's
process without running its ``atexit`` handlers (``ray.shutdown()``, ``ray.kill``, the
job ending). There the operating system reclaims everything (sockets, GPU memory,
threads), and the judge cache loses nothing: SQLite commits each write.

Where the interpreter does exit normally (the driver, a script calling the batch
manager, ``compute_score`` in a plain process, tests), :func:`close_at_exit` closes each
built job once, at exit, with what can be closed without an event loop: in-process
models (their inference threads stop and the weights are dropped) and the judge cache
file. HTTP clients belong to the event loop that opened them and close with it.
"""

from __future__ import annotations

import atexit
import logging
import threading
from typing import Protocol, runtime_checkable

from openjudge.config import BuiltJob

__all__ = ["close_all", "close_at_exit", "close_job"]

logger = logging.getLogger(__name__)


@runtime_checkable
class _Closable(Protocol):
    def close(self) -> None: ...


_jobs: list[BuiltJob] = []
_lock = threading.Lock()
_registered = False


def close_job(job: BuiltJob) -> None:
    """Close ``job``'s providers that hold resources outside an event loop, and its judge cache.

    A provider that fails to close is logged and skipped; the others are still closed.
    """
    for name, provider in job.providers.items():
        if isinstance(provider, _Closable):  # in-process models; HTTP providers close with their loop
            try:
                provider.close()
            except Exception:
                logger.exception("openjudge: closing provider %r failed", name)
    if job.cache is not None:
        job.cache.close()


def close_at_exit(job: BuiltJob) -> None:
    """Close ``job`` when the interpreter exits (not in Ray actors: see the module docstring)."""
    global _registered
    with _lock:
        _jobs.append(job)
        if not _registered:
            atexit.register(close_all)
            _registered = True


def close_all() -> None:
    """Close every job given to :func:`close_at_exit` that is still open (idempotent)."""
    with _lock:
        jobs = list(_jobs)
        _jobs.clear()
    for job in jobs:
        close_job(job)
