"""Re-use results already in a results file while grading what a changed job adds.

When a job gains a grader (or, with ``--regrade``, changes one), the samples already in
its results file are graded again by a runner whose graders *replay* the stored result
of every grader that did not change, and grade for real the ones that did. The sample
carries its stored results under :data:`STORED_KEY` (plain JSON, so it crosses to Ray
workers unchanged), the runner computes the aggregates over old and new results alike,
and every other part of the run (timeouts, progress, the results line) is the usual one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue, TypeAdapter

from openjudge.graders.base_grader import BaseGrader, InputSpec
from openjudge.jobs._records import ResultEntry, result_from_entry
from openjudge.results import GraderResult, NotApplicable
from openjudge.runner._grader_config import BoundGrader, GraderConfig
from openjudge.runner.grading_runner import GradingRunner

__all__ = ["STORED_KEY", "replaying_runner", "with_stored"]

STORED_KEY = "\x00openjudge.stored"
"""The sample field that carries stored results: grader name -> results-file entry (JSON)."""

_STORED_INPUT = "\x00stored"
_NOT_APPLICABLE = "not_applicable"
_ENTRY: TypeAdapter[ResultEntry] = TypeAdapter(ResultEntry)


def with_stored(data: Mapping[str, JsonValue], stored: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """A copy of a sample that carries ``stored`` results (grader name -> entry JSON)."""
    return {**data, STORED_KEY: dict(stored)}


class _Replaying(BaseGrader):
    """Returns the stored result when the sample carries one, else grades with ``inner``."""

    def __init__(self, inner: BaseGrader) -> None:
        super().__init__(name=inner.name, mode=inner.mode, score_range=inner.score_range)
        self._inner = inner

    def input_spec(self) -> InputSpec:
        return InputSpec(frozenset(), frozenset(), accepts_any=True)

    async def aevaluate(self, **inputs: Any) -> GraderResult:
        stored = inputs.get(_STORED_INPUT)
        if stored is not None:
            result = result_from_entry(self.name, _ENTRY.validate_python(stored))
            if not isinstance(result, NotApplicable):  # never carried: see _replaying_config
                return result
        return await self._inner.aevaluate(**inputs)


def _replaying_config(key: str, config: GraderConfig) -> GraderConfig:
    """The grader replaying its stored result; routing (``when``) is the grader's own.

    A stored ``not_applicable`` is not replayed: routing decides again from the sample's
    fields, so a sample that now names the grader is graded for real.
    """
    bound = BoundGrader(key, config)  # the usual mapper checks and missing-field messages

    def inputs(sample: Mapping[str, Any]) -> Mapping[str, Any]:
        stored = sample.get(STORED_KEY)
        if isinstance(stored, Mapping) and key in stored:
            entry = stored[key]
            if not (isinstance(entry, Mapping) and entry.get("type") == _NOT_APPLICABLE):
                return {_STORED_INPUT: entry}
        return bound.inputs(sample)

    return GraderConfig(_Replaying(config.grader), inputs, when=config.when)


def replaying_runner(runner: GradingRunner) -> GradingRunner:
    """A runner like ``runner`` whose graders replay the results a sample carries."""
    return runner.replace(
        grader_configs={key: _replaying_config(key, cfg) for key, cfg in runner.grader_configs.items()},
        show_progress=False,
    )
