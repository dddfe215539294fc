"""Property tests: text graders stay in their declared range and never raise."""

from __future__ import annotations

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openjudge.graders.base_grader import BaseGrader, GraderError, GraderScore
from openjudge.graders.text import NumberAccuracyGrader, SimilarityGrader, StringMatchGrader
from openjudge.results import GraderResult

GRADERS: list[BaseGrader] = [
    StringMatchGrader("exact"),
    StringMatchGrader("normalized"),
    StringMatchGrader("contains", case_sensitive=False),
    SimilarityGrader("bleu"),
    SimilarityGrader("rouge_l"),
    SimilarityGrader("edit_distance"),
    NumberAccuracyGrader(scoring="f1", rel_tol=0.01),
]
REGEX = StringMatchGrader("regex")

TEXT = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(["中", "文", "👍", "\u0301", "\u200d", "🏽", " ", ",", ".", "1", "-", "e"]),
    ),
    max_size=60,
)
NOT_STR = st.one_of(st.none(), st.integers(), st.floats(), st.binary(), st.lists(st.integers(), max_size=2))
FIELDS = st.sampled_from(["response", "reference"])


def run(grader: BaseGrader, **inputs: object) -> GraderResult:
    return run_all([grader], **inputs)[0]


def run_all(graders: list[BaseGrader], **inputs: object) -> list[GraderResult]:
    """Evaluate every grader on the same inputs inside one event loop."""

    async def evaluate() -> list[GraderResult]:
        return [await grader.aevaluate(**inputs) for grader in graders]

    return anyio.run(evaluate)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(response=TEXT, reference=TEXT)
def test_scores_stay_in_range(response: str, reference: str) -> None:
    for grader, result in zip(GRADERS, run_all(GRADERS, response=response, reference=reference), strict=True):
        if isinstance(result, GraderError):
            # The only expected failure: a reference without numbers for NumberAccuracyGrader.
            assert isinstance(grader, NumberAccuracyGrader), result
            assert result.kind == "invalid_input"
            continue
        assert isinstance(result, GraderScore)
        assert grader.score_range is not None
        assert grader.score_range.contains(result.score), (grader, result)


@settings(max_examples=100, deadline=None)
@given(response=TEXT, pattern=TEXT)
def test_regex_never_raises(response: str, pattern: str) -> None:
    result = run(REGEX, response=response, reference=pattern)
    if isinstance(result, GraderError):
        assert result.kind == "invalid_input"
        assert "'reference'" in result.message
    else:
        assert isinstance(result, GraderScore)
        assert result.score in (0.0, 1.0)


@settings(max_examples=40, deadline=None)
@given(field=FIELDS, bad=NOT_STR, text=TEXT)
def test_bad_types_are_invalid_input(field: str, bad: object, text: str) -> None:
    inputs: dict[str, object] = {"response": text, "reference": text, field: bad}
    graders = [*GRADERS, REGEX]
    for grader, result in zip(graders, run_all(graders, **inputs), strict=True):
        assert isinstance(result, GraderError), (grader, result)
        assert result.kind == "invalid_input"
        assert f"'{field}'" in result.message
