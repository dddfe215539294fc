"""Gathers the samples of concurrent requests into one grading call.

A trainer sends many small requests at once (OpenRLHF: one sample each). Grading each
alone pays the runner's per-call overhead per sample; here the samples of every request
that arrived in the same turn of the event loop are graded in one
:meth:`~openjudge.integrations.scoring.RewardScorer.grade_many` call, then each request's
own samples get the failure policy (:meth:`~openjudge.integrations.scoring.RewardScorer.settle_many`:
group means within the request, as :meth:`~openjudge.integrations.scoring.RewardScorer.score_many` gives). No request waits for a
batch to fill: a batch is whatever arrived while the loop was busy. At most
``max_concurrent`` samples are graded at once; a batch waits for room.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from openjudge.integrations.scoring._scorer import Placement, RewardScorer, ScoredSample

__all__ = ["Batcher"]


class Batcher:
    """Grades the samples of concurrent requests together, at most ``max_concurrent`` at once."""

    def __init__(self, scorer: RewardScorer, max_concurrent: int) -> None:
        self._scorer = scorer
        self._max = max_concurrent
        self._waiting: list[tuple[Sequence[Mapping[str, Any]], asyncio.Future[list[ScoredSample]]]] = []
        self._flush_scheduled = False
        self._grading = 0
        self._room: asyncio.Condition | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def score(
        self, samples: Sequence[Mapping[str, Any]], groups: Sequence[str] | None, placement: Placement
    ) -> list[ScoredSample]:
        """Grade ``samples`` with those of the other requests of this turn; the failure policy
        applied to this request's samples alone.

        Raises:
            FailureRateExceeded: The ledger has tripped.
        """
        if not samples:
            return []
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[ScoredSample]] = loop.create_future()
        self._waiting.append((samples, future))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            loop.call_soon(self._flush)  # after the callbacks ready now: the other requests of this turn
        return self._scorer.settle_many(await future, groups, placement)

    def _flush(self) -> None:
        self._flush_scheduled = False
        waiting, self._waiting = self._waiting, []
        batch: list[tuple[Sequence[Mapping[str, Any]], asyncio.Future[list[ScoredSample]]]] = []
        size = 0
        for item in waiting:
            if batch and size + len(item[0]) > self._max:
                self._start(batch)
                batch, size = [], 0
            batch.append(item)
            size += len(item[0])
        if batch:
            self._start(batch)

    def _start(
        self, batch: list[tuple[Sequence[Mapping[str, Any]], asyncio.Future[list[ScoredSample]]]]
    ) -> None:
        task = asyncio.get_running_loop().create_task(self._grade(batch))
        self._tasks.add(task)  # held until done (the loop keeps only weak references)
        task.add_done_callback(self._tasks.discard)

    async def _grade(
        self, batch: list[tuple[Sequence[Mapping[str, Any]], asyncio.Future[list[ScoredSample]]]]
    ) -> None:
        samples = [sample for request, _ in batch for sample in request]
        n = min(len(samples), self._max)  # one request larger than the limit is graded alone
        if self._room is None:
            self._room = asyncio.Condition()
        async with self._room:
            await self._room.wait_for(lambda: self._grading + n <= self._max)
            self._grading += n
        try:
            graded = await self._scorer.grade_many(samples)
        except Exception as exc:  # every request of the batch gets it (FailureRateExceeded: a 503)
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        finally:
            async with self._room:
                self._grading -= n
                self._room.notify_all()
        start = 0
        for request, future in batch:
            if not future.done():
                future.set_result(graded[start : start + len(request)])
            start += len(request)
