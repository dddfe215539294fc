"""Models load one at a time per process: transformers' loading is not thread-safe.

Two models loading at once in one process (each off its own event loop) left the tied
``lm_head`` of SmolLM2 on the meta device about two runs in three; loading is now serialised.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from openjudge.providers.transformers import _loading
from openjudge.providers.transformers._settings import TransformersSettings


def test_two_loads_in_two_threads_never_overlap(monkeypatch: pytest.MonkeyPatch) -> None:
    inside = 0
    most = 0
    count = threading.Lock()

    def slow_load(settings: TransformersSettings, head: Any) -> Any:
        nonlocal inside, most
        with count:
            inside += 1
            most = max(most, inside)
        time.sleep(0.05)
        with count:
            inside -= 1
        return settings.model

    monkeypatch.setattr(_loading, "_load", slow_load)
    settings = [TransformersSettings(model=f"m{i}") for i in range(4)]
    loaded: list[object] = []
    threads = [
        threading.Thread(target=lambda s=s: loaded.append(_loading.load_model(s, "causal_lm")))
        for s in settings
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(map(str, loaded)) == ["m0", "m1", "m2", "m3"]
    assert most == 1
