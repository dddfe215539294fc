"""The per-grader functions' shared gradings: made once, read by each, errors and cancellation shared."""

from __future__ import annotations

import anyio
import pytest

from openjudge.errors import FailureRateExceeded
from openjudge.integrations.scoring import ScoredSample
from openjudge.integrations.trl._team import SharedGradings, batch_key

pytestmark = pytest.mark.anyio

BOTH = frozenset({"a", "b"})
SAMPLE = ScoredSample(1.0, False, {}, {})


def test_equal_batches_have_equal_keys_and_any_text_has_one() -> None:
    assert batch_key([{"response": "x", "n": 1}]) == batch_key([{"n": 1, "response": "x"}])
    assert batch_key([{"response": "x"}]) != batch_key([{"response": "y"}])
    assert len(batch_key([{"response": "lone \ud800 surrogate"}])) == 20


async def test_one_grading_per_batch_for_the_functions_it_was_made_for() -> None:
    shared = SharedGradings()
    made: list[frozenset[str]] = []

    async def grade(members: frozenset[str]) -> list[ScoredSample]:
        made.append(members)
        await anyio.sleep(0.01)
        return [SAMPLE]

    results: dict[str, list[ScoredSample]] = {}

    async def read(member: str) -> None:
        results[member] = await shared.get(member, BOTH, b"k", grade)

    async with anyio.create_task_group() as tg:
        tg.start_soon(read, "a")
        tg.start_soon(read, "b")
    assert made == [BOTH] and results == {"a": [SAMPLE], "b": [SAMPLE]}
    await shared.get("a", BOTH, b"k", grade)  # every function read it: the next equal batch is new
    assert made == [BOTH, BOTH]


async def test_the_grading_error_reaches_every_function() -> None:
    shared = SharedGradings()

    async def fail(members: frozenset[str]) -> list[ScoredSample]:
        await anyio.sleep(0.01)
        raise FailureRateExceeded("stop")

    errors: list[str] = []

    async def read(member: str) -> None:
        try:
            await shared.get(member, BOTH, b"k", fail)
        except FailureRateExceeded as exc:
            errors.append(f"{member}: {exc}")

    async with anyio.create_task_group() as tg:
        tg.start_soon(read, "a")
        tg.start_soon(read, "b")
    assert sorted(errors) == ["a: stop", "b: stop"]


async def test_a_cancelled_maker_leaves_the_grading_to_the_next_function() -> None:
    shared = SharedGradings()
    calls: list[str] = []

    async def slow(members: frozenset[str]) -> list[ScoredSample]:
        calls.append("graded")
        await anyio.sleep(0.05)
        return [SAMPLE]

    got: list[list[ScoredSample]] = []

    async def read_b() -> None:
        got.append(await shared.get("b", BOTH, b"k", slow))

    async with anyio.create_task_group() as tg:
        with anyio.CancelScope() as maker:
            tg.start_soon(read_b)  # waits for the grading "a" makes

            async def cancel_soon() -> None:
                await anyio.sleep(0.01)
                maker.cancel()

            tg.start_soon(cancel_soon)
            await shared.get("a", BOTH, b"k", slow)  # cancelled while it grades
    assert got == [[SAMPLE]] and calls == ["graded", "graded"]
