"""A hanging equivalence check returns the bottom score within budget + 0.5 s, in a thread and in a Ray actor."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path

import pytest

from openjudge.graders.base_grader import GraderScore
from openjudge.graders.math import MathAnswerEquivalenceGrader

pytestmark = pytest.mark.slow  # hanging checks run out their budget; one in a Ray actor

ROOT = Path(__file__).resolve().parents[3]
BUDGET_S = 1.0


class Hangs(MathAnswerEquivalenceGrader):
    symbolic_function = "tests.graders.slow_functions:never_decides_answers"


async def _timed_hang() -> tuple[float, float, str, int]:
    """(elapsed, score, cause, worker pid) of one hanging check, its worker started first."""
    grader = Hangs(sympy_timeout_s=BUDGET_S, sympy_workers=1)
    pid = await grader.workers.call("tests.graders.slow_functions:pid", [], timeout_s=120)
    start = time.monotonic()
    result = await grader.aevaluate(response=r"\boxed{\sqrt{2}}", reference=r"\frac{2}{\sqrt{2}}")
    elapsed = time.monotonic() - start
    grader.workers.close()
    assert isinstance(result, GraderScore)
    return elapsed, result.score, str(result.metadata["cause"]), int(str(pid))


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie is reaped by its parent; /proc shows its state.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(")")[-1].split()[0] == "Z"


def test_hanging_check_in_a_worker_thread() -> None:
    out: list[tuple[float, float, str, int]] = []
    thread = threading.Thread(target=lambda: out.append(asyncio.run(_timed_hang())))
    thread.start()
    thread.join(timeout=120)
    elapsed, score, cause, pid = out[0]
    assert elapsed <= BUDGET_S + 0.5
    assert (score, cause) == (0.0, "timeout")
    assert _gone(pid)  # the hanging worker was killed, not leaked


def test_hanging_check_in_a_ray_actor(ray_session: None) -> None:
    import ray

    @ray.remote(num_cpus=1)
    class Grading:
        def run(self) -> tuple[float, float, str, int]:
            elapsed, score, cause, pid = asyncio.run(_timed_hang())
            return elapsed, score, cause, int(_gone(pid))

    actor = Grading.remote()  # type: ignore[attr-defined]  # ray.remote adds .remote
    elapsed, score, cause, gone = ray.get(actor.run.remote(), timeout=180)
    ray.kill(actor)
    assert elapsed <= BUDGET_S + 0.5
    assert (score, cause, gone) == (0.0, "timeout", 1)


def test_hanging_check_under_trio() -> None:
    pytest.importorskip("trio")
    import anyio

    elapsed, score, cause, pid = anyio.run(_timed_hang, backend="trio")
    assert elapsed <= BUDGET_S + 0.5
    assert (score, cause) == (0.0, "timeout")
    assert _gone(pid)
