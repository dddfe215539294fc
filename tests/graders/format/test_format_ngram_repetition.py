"""NgramRepetitionPenaltyGrader: repetition rates and penalties on hand-made text."""

from __future__ import annotations

import time

import pytest

from openjudge.graders.base_grader import GraderError, GraderScore
from openjudge.graders.format import NgramRepetitionPenaltyGrader

pytestmark = pytest.mark.anyio


async def grade(grader: NgramRepetitionPenaltyGrader, response: str) -> GraderScore:
    result = await grader.aevaluate(response=response)
    assert isinstance(result, GraderScore), result
    assert result.score_range is not None
    assert result.score_range.contains(result.score)
    return result


async def test_no_repetition() -> None:
    result = await grade(NgramRepetitionPenaltyGrader(n=2), "one two three four five")
    assert result.score == 0.0
    assert result.metadata["repetition_rate"] == 0.0
    assert result.metadata["total_ngrams"] == 4


async def test_exact_rate() -> None:
    # Tokens: the cat . the cat . -> 6 tokens, 5 bigrams, 3 distinct ("the cat", "cat .", ". the").
    result = await grade(NgramRepetitionPenaltyGrader(n=2), "The cat. the cat.")
    assert result.metadata["unique_ngrams"] == 3
    assert result.metadata["total_ngrams"] == 5
    assert result.score == pytest.approx(-(1 - 3 / 5))
    assert result.metadata["most_repeated"] == [
        {"ngram": "the cat", "count": 2},
        {"ngram": "cat .", "count": 2},
    ]


async def test_loop_approaches_minus_one() -> None:
    result = await grade(NgramRepetitionPenaltyGrader(n=3), "go " * 1000)
    assert result.score == pytest.approx(-(1 - 1 / 998))


async def test_threshold_and_rate() -> None:
    grader = NgramRepetitionPenaltyGrader(n=1, threshold=0.5, penalty_rate=2.0)
    # 4 unigrams, 1 distinct: rate 0.75 -> penalty (0.75 - 0.5) * 2 = 0.5
    assert (await grade(grader, "a a a a")).score == pytest.approx(-0.5)
    # 4 unigrams, 3 distinct: rate 0.25 < threshold
    assert (await grade(grader, "a a b c")).score == 0.0
    capped = NgramRepetitionPenaltyGrader(n=1, penalty_rate=10.0)
    assert (await grade(capped, "a a a a")).score == -1.0


async def test_chinese_and_case() -> None:
    result = await grade(NgramRepetitionPenaltyGrader(n=2), "我爱你我爱你")
    assert result.metadata["tokens"] == 6
    assert result.score == pytest.approx(-(1 - 3 / 5))
    sensitive = await grade(NgramRepetitionPenaltyGrader(n=1, case_sensitive=True), "A a")
    assert sensitive.score == 0.0
    insensitive = await grade(NgramRepetitionPenaltyGrader(n=1), "A a")
    assert insensitive.score == pytest.approx(-0.5)


async def test_short_and_empty_text() -> None:
    grader = NgramRepetitionPenaltyGrader(n=3)
    assert (await grade(grader, "")).score == 0.0
    assert (await grade(grader, "two words")).score == 0.0


async def test_think_scope() -> None:
    grader = NgramRepetitionPenaltyGrader(n=1, scope="think")
    result = await grade(grader, "<think>a a</think><answer>b c d e f g</answer>")
    assert result.score == pytest.approx(-0.5)
    missing = await grade(grader, "no reasoning block a a a a")
    assert missing.score == 0.0
    assert missing.metadata["think_blocks"] == 0
    custom = NgramRepetitionPenaltyGrader(n=1, scope="think", think_tag="reason")
    assert (await grade(custom, "<reason>x y</reason> x x x")).score == 0.0


async def test_long_input_is_fast() -> None:
    start = time.perf_counter()
    result = await grade(NgramRepetitionPenaltyGrader(), "lorem ipsum dolor sit amet " * 4000)
    assert result.score < -0.99
    assert time.perf_counter() - start < 2.0


async def test_invalid_input() -> None:
    result = await NgramRepetitionPenaltyGrader().aevaluate(response=["a"])  # type: ignore[arg-type]  # deliberately wrong
    assert isinstance(result, GraderError)
    assert result.kind == "invalid_input"
    assert "'response'" in result.message


def test_bad_configuration() -> None:
    for kwargs in ({"n": 0}, {"threshold": 1.0}, {"penalty_rate": -1.0}, {"think_tag": "<think>"}):
        with pytest.raises(ValueError):  # noqa: PT011 - each case has its own message
            NgramRepetitionPenaltyGrader(**kwargs)
