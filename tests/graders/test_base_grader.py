from __future__ import annotations

from typing import Any

import pytest

from openjudge.graders.base_grader import BaseGrader, InputSpec, InvalidInputError, grader_boundary
from openjudge.graders.function_grader import FunctionGrader
from openjudge.results import GraderError, GraderResult, GraderScore

pytestmark = pytest.mark.anyio


class Echo(BaseGrader):
    default_name = "echo"

    @grader_boundary
    async def aevaluate(self, *, response: str, bonus: float = 0.0) -> GraderScore:
        if response == "bad":
            raise InvalidInputError("response: 'bad' is not allowed")
        if response == "crash":
            raise RuntimeError("internal bug")
        return GraderScore(name=self.name, score=len(response) + bonus)


class Legacy(BaseGrader):
    async def _aevaluate(self, **kwargs: Any) -> GraderResult:
        return GraderScore(name=self.name, score=float(len(kwargs)))


def test_input_spec_reads_keyword_parameters() -> None:
    spec = Echo().input_spec()
    assert spec == InputSpec(
        required=frozenset({"response"}), optional=frozenset({"bonus"}), accepts_any=False
    )
    assert spec.select({"response": "x", "other": 1}) == {"response": "x"}
    assert spec.missing({"bonus": 1.0}) == ["response"]


async def test_boundary_turns_failures_into_errors() -> None:
    grader = Echo()
    ok = await grader.aevaluate(response="abc", bonus=1.0)
    assert isinstance(ok, GraderScore) and ok.score == 4.0
    bad = await grader.aevaluate(response="bad")
    assert isinstance(bad, GraderError)
    assert (bad.kind, bad.message) == ("invalid_input", "response: 'bad' is not allowed")
    crash = await grader.aevaluate(response="crash")
    assert isinstance(crash, GraderError) and crash.kind == "internal" and crash.error_type == "RuntimeError"
    missing = await grader.aevaluate()  # type: ignore[call-arg]  # the bad call under test
    assert isinstance(missing, GraderError) and missing.kind == "invalid_input"
    assert "response" in missing.message


async def test_legacy_underscore_aevaluate_is_exposed() -> None:
    grader = Legacy(name="legacy")
    result = await grader.aevaluate(a=1, b=2)
    assert isinstance(result, GraderScore) and result.score == 2.0
    assert grader.input_spec().accepts_any


async def test_function_grader_sync_async_and_numbers() -> None:
    def exact(response: str, reference: str) -> bool:
        return response.strip() == reference

    async def length(response: str) -> float:
        return float(len(response))

    g = FunctionGrader(exact, score_range=(0, 1))
    assert g.name == "exact"
    assert g.input_spec().required == frozenset({"response", "reference"})
    hit = await g.aevaluate(response=" 4 ", reference="4", extra="ignored")
    assert isinstance(hit, GraderScore) and hit.score == 1.0 and hit.normalized_score == 1.0
    missing = await g.aevaluate(response="4")
    assert (
        isinstance(missing, GraderError)
        and missing.kind == "invalid_input"
        and "'reference'" in missing.message
    )
    long = await FunctionGrader(length, name="len").aevaluate(response="abcd")
    assert isinstance(long, GraderScore) and long.score == 4.0


async def test_function_grader_rejects_non_numbers_and_nan() -> None:
    nan = await FunctionGrader(lambda response: float("nan"), name="nan").aevaluate(response="x")
    assert isinstance(nan, GraderError) and nan.kind == "internal"
    text = await FunctionGrader(lambda response: "high", name="txt").aevaluate(response="x")  # type: ignore[arg-type,return-value]
    assert isinstance(text, GraderError) and "'high'" in text.message
