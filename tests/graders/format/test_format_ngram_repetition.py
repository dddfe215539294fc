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


@pytest.mark.parametrize(
    "disguise",
    [
        lambda w, k: w + "\u034f",  # an attack found in testing: a combining grapheme joiner per word
        lambda w, k: w + "\u034f" * (k % 7),  # a different count of them per copy
        lambda w, k: w + "\u200b" * (k % 5),  # zero-width spaces
        lambda w, k: w + "\ufe0f" * (k % 3),  # variation selectors
        lambda w, k: w + "\u0301" * (k % 2),  # a visible accent on every other copy
        lambda w, k: w.replace("o", "\u043e") if k % 2 else w,  # Cyrillic о on every other copy
        lambda w, k: "".join(chr(ord(c) + 0xFEE0) for c in w) if k % 3 == 0 else w,  # full-width forms
    ],
    ids=["cgj", "cgj_counts", "zwsp", "vs16", "accent", "cyrillic_o", "fullwidth"],
)
async def test_invisible_marks_and_lookalikes_do_not_evade_the_penalty(disguise: object) -> None:
    grader = NgramRepetitionPenaltyGrader()
    words = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog"]
    plain = " ".join(" ".join(words) for _ in range(40))
    disguised = " ".join(" ".join(disguise(w, k + i) for i, w in enumerate(words)) for k in range(40))  # type: ignore[operator]
    assert disguised != plain
    expected = (await grade(grader, plain)).score
    assert expected < -0.9
    assert (await grade(grader, disguised)).score == pytest.approx(expected)


async def test_think_scope_reads_tags_in_any_case() -> None:
    grader = NgramRepetitionPenaltyGrader(n=1, scope="think")
    assert (await grade(grader, "<THINK>a a</ think >")).score == pytest.approx(-0.5)


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
