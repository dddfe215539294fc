"""Closing the HTTP clients that reward calls open, on the event loop that opened them.

TRL awaits async reward functions on its own event loop, run by a daemon thread that
``GRPOTrainer.__init__`` starts and that an ``atexit`` handler stops with ``loop.stop()``:
the loop's tasks are never cancelled and the loop is never closed. A provider's HTTP client
belongs to the loop that opened it and closes when that loop shuts down
(:class:`openjudge.providers._http.LoopClients`); a loop that is only stopped never shuts
down, so aiohttp reported "Unclosed client session" as every training process ended.

:class:`LoopCloser` closes them on their loop while it still runs: when the reward set is
closed (:meth:`~openjudge.integrations.trl.OpenJudgeRewards.close`), when it is garbage-collected, or at interpreter
exit. The exit hook is registered at the first reward call, after TRL's own, so it runs
before TRL stops the loop (``atexit`` runs the last registered first).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
import weakref
from collections.abc import Sequence

from openjudge.models.chat_client import ChatClient

__all__ = ["LoopCloser"]

logger = logging.getLogger(__name__)

CLOSE_TIMEOUT_S = 10.0
"""How long closing waits for a loop: a stuck loop must not hang the process's exit."""

_closing: set[asyncio.Task[None]] = set()  # tasks scheduled on a loop's own thread, kept until done


class LoopCloser:
    """Closes ``clients`` on every asyncio loop they were called on, once.

    Args:
        owner: The object whose collection closes them (the reward set).
        clients: The chat clients to close.
    """

    def __init__(self, owner: object, clients: Sequence[ChatClient]) -> None:
        self._clients = tuple(clients)
        self._loops: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
        self._finalizer = weakref.finalize(owner, _close_on_loops, self._clients, self._loops)
        # weakref's own exit hook runs after TRL's has stopped the loop: ours is registered later.
        self._finalizer.atexit = False
        self._lock = threading.Lock()
        self._at_exit = False

    def saw_running_loop(self) -> None:
        """Remember the running loop (each reward call calls this); trio's clients close with its run."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if loop in self._loops:
            return
        with self._lock:
            self._loops.add(loop)
            if not self._at_exit:
                atexit.register(self._finalizer)
                self._at_exit = True

    def close(self) -> None:
        """Close the clients on the loops that still run (a later call opens new ones, closed in turn)."""
        _close_on_loops(self._clients, self._loops)


def _close_on_loops(
    clients: tuple[ChatClient, ...], loops: weakref.WeakSet[asyncio.AbstractEventLoop]
) -> None:
    try:
        current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        current = None
    for loop in list(loops):
        if loop.is_closed() or not loop.is_running():
            continue  # nothing runs on it any more: its clients go with it
        if loop is current:  # on the loop's own thread (collected during a call): schedule, never block it
            task = loop.create_task(_aclose(clients))
            _closing.add(task)
            task.add_done_callback(_closing.discard)
            continue
        future = asyncio.run_coroutine_threadsafe(_aclose(clients), loop)
        try:
            future.result(timeout=CLOSE_TIMEOUT_S)
        except Exception as exc:
            future.cancel()
            logger.warning("openjudge: closing the reward functions' HTTP clients failed: %r", exc)


async def _aclose(clients: tuple[ChatClient, ...]) -> None:
    for client in clients:
        try:
            await client.aclose()
        except Exception:
            logger.exception("openjudge: closing %r failed", client)
