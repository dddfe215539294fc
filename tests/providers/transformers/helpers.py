"""Small helpers shared by these tests."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from providers.transformers import constraints_installed

needs_llguidance = pytest.mark.skipif(
    not constraints_installed(),
    reason="constrained decoding needs llguidance: pip install 'openjudge[transformers]' "
    "(scripts/install-rl-extras.sh installs it)",
)


async def until(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` on the event loop (bounded: a stuck test fails instead of hanging)."""
    with anyio.fail_after(30):
        while True:
            if condition():
                return
            await anyio.sleep(0.002)
