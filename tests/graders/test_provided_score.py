from __future__ import annotations

import pytest

from openjudge.graders._registry import BUILTIN_GRADERS
from openjudge.graders.provided_score import ProvidedScoreGrader
from openjudge.results import GraderError, GraderScore

pytestmark = pytest.mark.anyio


async def test_a_provided_score_in_its_range_is_normalised() -> None:
    result = await ProvidedScoreGrader(score_range=(0, 2)).aevaluate(score=1)
    assert isinstance(result, GraderScore) and result.score == 1.0 and result.normalized_score == 0.5
    raw = await ProvidedScoreGrader(name="reward").aevaluate(score=-3.5)
    assert isinstance(raw, GraderScore) and (raw.name, raw.score, raw.score_range) == ("reward", -3.5, None)


@pytest.mark.parametrize(
    ("score", "message"),
    [
        (True, "expected a finite number"),
        ("1", "expected a finite number"),
        (float("inf"), "finite"),
        (3, "outside"),
    ],
)
async def test_bad_scores_are_invalid_input(score: object, message: str) -> None:
    result = await ProvidedScoreGrader(score_range=(0, 2)).aevaluate(score=score)  # type: ignore[arg-type]
    assert isinstance(result, GraderError) and result.kind == "invalid_input" and message in result.message


def test_registered_as_a_rule_grader_taking_score() -> None:
    info = BUILTIN_GRADERS["provided_score"]
    assert (info.kind, info.required_inputs, info.optional_inputs) == ("rule", ("score",), ())
