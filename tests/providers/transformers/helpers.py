"""Small helpers shared by these tests."""

from __future__ import annotations

from collections.abc import Callable

import anyio


async def until(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` on the event loop (bounded: a stuck test fails instead of hanging)."""
    with anyio.fail_after(30):
        while True:
            if condition():
                return
            await anyio.sleep(0.002)
