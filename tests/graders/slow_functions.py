"""Functions for WorkerPool tests; workers import them by name (``tests.graders.slow_functions:...``)."""

from __future__ import annotations

import os
import time


def spin(duration_s: float) -> int:
    """Busy for ``seconds``, then return the worker's pid."""
    end = time.monotonic() + duration_s
    while time.monotonic() < end:
        pass
    return os.getpid()


def huge_power(exponent: int) -> int:
    """One C call that holds the GIL for as long as it takes (no thread could stop it)."""
    return len(str(9 ** (10**exponent)))


def fail(message: str) -> None:
    raise ValueError(message)


def pid() -> int:
    return os.getpid()


def allocate(megabytes: int) -> int:
    return len(bytearray(megabytes * 1024 * 1024))


def never_decides(left: str, right: str, abs_tol: float, rel_tol: float) -> bool:
    """A symbolic comparison that never finishes (in place of sympy on a hostile answer)."""
    return len(str(9 ** (10**10))) > 0


def never_decides_answers(reference: str, candidates: list[dict[str, object]]) -> dict[str, object]:
    """An equivalence check that never finishes (math-verify hanging on a hostile answer)."""
    return {"equal": len(str(9 ** (10**10))) > 0, "cause": "never"}


def slow_or_equal(reference: str, candidates: list[dict[str, object]]) -> dict[str, object]:
    """A stand-in for the math worker: answers holding ``SLOW`` never finish; the others take 50 ms
    and equal the reference when they have the same characters (``x+1`` and ``1+x``)."""
    texts = candidates[0]["texts"]
    assert isinstance(texts, list)
    text = str(texts[0])
    if "SLOW" in text:
        spin(3600)
    spin(0.05)
    same = sorted(text.replace(" ", "")) == sorted(reference.replace(" ", ""))
    return {"equal": same, "cause": "test"}
