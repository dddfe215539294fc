"""The per-grader functions of one reward set judge each batch once, together.

TRL calls each reward function with the same batch and awaits them together. When a
completion's judge fails, every per-grader function must know it, so that, under
``drop``, all of them return ``None`` for that completion (TRL then leaves it out)
instead of only the failed one (TRL would sum the others and train the completion as
if the failed judge had given 0). So the first function of the set called with a batch
grades the batch with all the set's per-grader graders; the others, called with the
same batch, await that grading and read their own grader's results from it.

A batch is recognised by its content (the samples' fields), so a function called twice
with equal batches grades twice, and functions called with equal batches by
concurrent callers (``AsyncGRPOTrainer`` scores several groups at once) share only
what is equal. A grading is forgotten once every function it was made for has read it,
or when newer gradings push it out (a function the caller never calls).
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import anyio
from pydantic import JsonValue

from openjudge.integrations.scoring._scorer import ScoredSample

__all__ = ["SharedGradings", "batch_key"]

_KEEP = 64
"""Gradings kept at once (those of batches not every function has read yet)."""


def batch_key(samples: Sequence[dict[str, JsonValue]]) -> bytes:
    """A digest of a batch's samples (equal batches, equal keys)."""
    data = json.dumps(list(samples), sort_keys=True)  # ASCII: any text (lone surrogates too) encodes
    return hashlib.blake2b(data.encode("ascii"), digest_size=20).digest()


class _Cancelled(Exception):
    """The function that was grading a batch was cancelled: another one grades it."""


@dataclass(eq=False)
class _Grading:
    members: frozenset[str]
    read: set[str] = field(default_factory=set)
    done: anyio.Event = field(default_factory=anyio.Event)
    result: list[ScoredSample] | BaseException | None = None


class SharedGradings:
    """Gradings of recent batches, each shared by the functions it was made for."""

    def __init__(self) -> None:
        self._gradings: OrderedDict[bytes, _Grading] = OrderedDict()

    async def get(
        self,
        member: str,
        members: frozenset[str],
        key: bytes,
        grade: Callable[[frozenset[str]], Awaitable[list[ScoredSample]]],
    ) -> list[ScoredSample]:
        """``member``'s view of the batch ``key``: the grading by ``members`` (made now, or awaited).

        Args:
            member: The calling function's grader.
            members: The graders of the set's per-grader functions now.
            key: The batch (:func:`batch_key`).
            grade: Grades the batch with the given graders.

        Raises:
            Exception: What the grading raised (e.g. ``FailureRateExceeded``).
        """
        grading = self._gradings.get(key)
        owner = grading is None or member in grading.read or member not in grading.members
        if owner:
            grading = _Grading(members)
            self._gradings[key] = grading
            self._gradings.move_to_end(key)
            while len(self._gradings) > _KEEP:
                self._gradings.popitem(last=False)
        assert grading is not None
        grading.read.add(member)
        if grading.read >= grading.members and self._gradings.get(key) is grading:
            del self._gradings[key]  # every function it was made for has it
        if owner:
            return await self._make(grading, grade)
        await grading.done.wait()
        result = grading.result
        if result is None or isinstance(result, _Cancelled):
            return await grade(grading.members)  # its maker was cancelled: grade it here
        if isinstance(result, BaseException):
            raise result
        return result

    @staticmethod
    async def _make(
        grading: _Grading, grade: Callable[[frozenset[str]], Awaitable[list[ScoredSample]]]
    ) -> list[ScoredSample]:
        try:
            result = await grade(grading.members)
            grading.result = result
        except anyio.get_cancelled_exc_class():
            grading.result = _Cancelled()
            raise
        except Exception as exc:
            grading.result = exc
            raise
        finally:
            grading.done.set()
        return result
