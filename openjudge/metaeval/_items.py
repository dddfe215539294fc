"""Labelled items: a pair with the better response named, or a response with a score.

A meta-evaluation runs a judge config's graders on these items and compares the verdicts
with the labels. Each grader sees an item as a *sample* (a dict, like a line of a job's
dataset), so a config's mappers work unchanged:

* a pair, judged by a grader that reads both responses, as
  ``{"prompt", "query", "response_a", "response_b", "responses": [a, b], "reference"?, ...}``
  (``query`` repeats ``prompt`` for the built-in graders; ``responses`` serves listwise ones);
* a pair, judged by a grader that scores one response, as two samples
  ``{"prompt", "query", "response", "reference"?, ...}``, one per response;
* a scored response, likewise as one such sample.

Extra fields of the item (``extra``) are added to every sample, without replacing these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from pydantic import JsonValue

__all__ = ["LabelledSet", "PairItem", "PairLabel", "PairwiseSet", "PointItem", "PointwiseSet"]

PairLabel: TypeAlias = Literal["A", "B", "tie"]
"""Which response of a pair is better: ``response_a``, ``response_b``, or neither."""


def _base(prompt: str, reference: str | None, extra: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    sample: dict[str, JsonValue] = dict(extra)
    sample["prompt"] = prompt
    sample["query"] = prompt
    if reference is not None:
        sample["reference"] = reference
    return sample


@dataclass(frozen=True, slots=True)
class PairItem:
    """Two responses to one prompt, and which is better.

    Attributes:
        id: Stable id (from the file, or a content hash).
        line: Where the item is in its file (a line, or an index in a JSON array).
        prompt: The prompt both responses answer.
        response_a: The first response as stored.
        response_b: The second response as stored.
        label: ``"A"``, ``"B"`` or ``"tie"``.
        reference: A reference answer, if the data has one.
        extra: Other fields, passed to graders with every sample.
    """

    id: str
    line: int
    prompt: str
    response_a: str
    response_b: str
    label: PairLabel
    reference: str | None = None
    extra: Mapping[str, JsonValue] = field(default_factory=dict)

    def pair_sample(self, *, swapped: bool) -> dict[str, JsonValue]:
        """The sample a pair grader sees; ``swapped`` shows ``response_b`` first."""
        first, second = (self.response_b, self.response_a) if swapped else (self.response_a, self.response_b)
        sample = _base(self.prompt, self.reference, self.extra)
        sample["response_a"] = first
        sample["response_b"] = second
        sample["responses"] = [first, second]
        return sample

    def single_sample(self, side: Literal["A", "B"]) -> dict[str, JsonValue]:
        """The sample a one-response grader sees for one side of the pair."""
        sample = _base(self.prompt, self.reference, self.extra)
        sample["response"] = self.response_a if side == "A" else self.response_b
        return sample


@dataclass(frozen=True, slots=True)
class PointItem:
    """One response to a prompt, and its score.

    Attributes:
        id: Stable id (from the file, or a content hash).
        line: Where the item is in its file.
        prompt: The prompt.
        response: The response.
        label: The labelled score, on the grader's raw scale.
        reference: A reference answer, if the data has one.
        extra: Other fields, passed to graders with every sample.
    """

    id: str
    line: int
    prompt: str
    response: str
    label: float
    reference: str | None = None
    extra: Mapping[str, JsonValue] = field(default_factory=dict)

    def single_sample(self) -> dict[str, JsonValue]:
        """The sample a grader sees."""
        sample = _base(self.prompt, self.reference, self.extra)
        sample["response"] = self.response
        return sample


@dataclass(frozen=True, slots=True)
class PairwiseSet:
    """Labelled pairs read from one file.

    Attributes:
        items: The pairs, in file order.
        source: Where they came from (a path, or a description).
        format: The format they were read as (see :mod:`~openjudge.metaeval._loaders`).
        skipped: Messages for records that could not be used (only when asked to skip them).
    """

    items: tuple[PairItem, ...]
    source: str = "<memory>"
    format: str = "pairwise"
    skipped: tuple[str, ...] = ()
    kind: Literal["pairwise"] = "pairwise"


@dataclass(frozen=True, slots=True)
class PointwiseSet:
    """Labelled scored responses read from one file (see :class:`PairwiseSet`)."""

    items: tuple[PointItem, ...]
    source: str = "<memory>"
    format: str = "pointwise"
    skipped: tuple[str, ...] = ()
    kind: Literal["pointwise"] = "pointwise"


LabelledSet: TypeAlias = PairwiseSet | PointwiseSet
