"""TRL's event loop for async reward functions, without importing TRL (its import pulls torch).

The same as ``trl.trainer.utils.start_event_loop_in_daemon`` and
``shutdown_event_loop_in_daemon`` (TRL 1.16): ``GRPOTrainer.__init__`` starts the loop in a
daemon thread and registers the shutdown with ``atexit``; the shutdown only stops the loop
(its tasks are never cancelled, the loop never closed).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable


def trl_loop() -> tuple[asyncio.AbstractEventLoop, Callable[[], None]]:
    """A running loop in a daemon thread, and the function that stops it."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait()

    def shutdown() -> None:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)

    return loop, shutdown
