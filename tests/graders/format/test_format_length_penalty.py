"""LengthPenaltyGrader: penalty values at and around the bounds, units, unicode."""

from __future__ import annotations

import pytest

from openjudge.graders.base_grader import GraderError, GraderScore
from openjudge.graders.format import LengthPenaltyGrader

pytestmark = pytest.mark.anyio


async def score(grader: LengthPenaltyGrader, response: str) -> float:
    result = await grader.aevaluate(response=response)
    assert isinstance(result, GraderScore), result
    assert result.score_range is not None
    assert (result.score_range.low, result.score_range.high) == (-1.0, 0.0)
    return result.score


@pytest.mark.parametrize(
    ("length", "expected"),
    [
        (0, -0.5),
        (5, -0.25),
        (9, -0.05),
        (10, 0.0),
        (15, 0.0),
        (20, 0.0),
        (21, -0.05),
        (30, -0.5),
        (40, -1.0),
        (500, -1.0),
    ],
)
async def test_char_penalty(length: int, expected: float) -> None:
    grader = LengthPenaltyGrader(min_length=10, max_length=20, penalty_rate=0.05)
    assert await score(grader, "x" * length) == pytest.approx(expected)


async def test_defaults() -> None:
    grader = LengthPenaltyGrader()
    assert await score(grader, "x" * 10) == 0.0
    assert await score(grader, "x" * 1000) == 0.0
    assert await score(grader, "x" * 1001) == pytest.approx(-0.01)
    assert await score(grader, "") == pytest.approx(-0.1)
    assert await score(grader, "x" * 100_000) == -1.0


async def test_unicode_counts_code_points_after_nfc() -> None:
    grader = LengthPenaltyGrader(min_length=4, max_length=4, penalty_rate=0.25)
    assert await score(grader, "北京欢迎") == 0.0
    assert await score(grader, "cafe\u0301") == 0.0  # NFC makes it 4 code points
    assert await score(grader, "👍👍") == -0.5


async def test_token_unit() -> None:
    grader = LengthPenaltyGrader(min_length=2, max_length=3, unit="tokens", penalty_rate=0.1)
    assert await score(grader, "one two") == 0.0
    assert await score(grader, "one") == pytest.approx(-0.1)
    assert await score(grader, "a b c d e f") == pytest.approx(-0.3)
    assert await score(grader, "没有空格的中文句子") == pytest.approx(-0.1)


async def test_no_upper_bound_and_metadata() -> None:
    grader = LengthPenaltyGrader(min_length=0, max_length=None)
    result = await grader.aevaluate(response="x" * 50_000)
    assert isinstance(result, GraderScore)
    assert result.score == 0.0
    assert result.metadata == {
        "length": 50_000,
        "unit": "chars",
        "min_length": 0,
        "max_length": None,
        "distance": 0,
    }


async def test_invalid_input() -> None:
    result = await LengthPenaltyGrader().aevaluate(response=123)  # type: ignore[arg-type]  # deliberately wrong
    assert isinstance(result, GraderError)
    assert result.kind == "invalid_input"
    assert "'response'" in result.message


def test_bad_configuration() -> None:
    with pytest.raises(ValueError, match="min_length"):
        LengthPenaltyGrader(min_length=10, max_length=5)
    with pytest.raises(ValueError, match="min_length"):
        LengthPenaltyGrader(min_length=-1)
    with pytest.raises(ValueError, match="penalty_rate"):
        LengthPenaltyGrader(penalty_rate=0)
    with pytest.raises(ValueError, match="unit"):
        LengthPenaltyGrader(unit="words")  # type: ignore[arg-type]  # deliberately wrong


async def test_invisible_padding_does_not_reach_min_length() -> None:
    chars = LengthPenaltyGrader(min_length=10, unit="chars")
    tokens = LengthPenaltyGrader(min_length=10, unit="tokens")
    assert await score(chars, "short" + "\u200b" * 50) == await score(chars, "short")
    assert await score(tokens, "short" + " \u200b \u034f" * 20) == await score(tokens, "short")


async def test_blank_lookalikes_do_not_hide_words_from_max_length() -> None:
    grader = LengthPenaltyGrader(min_length=0, max_length=3, unit="tokens")
    assert await score(grader, "\u2800".join(["word"] * 6)) == await score(grader, " ".join(["word"] * 6))
