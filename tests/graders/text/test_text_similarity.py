"""SimilarityGrader: BLEU, ROUGE-L and edit distance on hand-made texts."""

from __future__ import annotations

import math
import random
import time

import pytest

from openjudge.graders.base_grader import GraderError, GraderScore
from openjudge.graders.text import SimilarityGrader
from openjudge.graders.text._metrics import levenshtein_distance, sentence_bleu
from openjudge.graders.text._similarity import SimilarityMetric
from openjudge.graders.text._tokens import tokenize

pytestmark = pytest.mark.anyio


async def grade(grader: SimilarityGrader, response: str, reference: str) -> GraderScore:
    result = await grader.aevaluate(response=response, reference=reference)
    assert isinstance(result, GraderScore), result
    assert result.score_range is not None
    assert result.score_range.contains(result.score)
    return result


async def test_bleu() -> None:
    result = await grade(SimilarityGrader("bleu"), "The cat sat on the mat.", "the cat is on the mat.")
    # 7 tokens each (the final "." counts); case-folded by default.
    assert result.metadata["response_tokens"] == 7
    assert result.metadata["precisions"] == [6 / 7, 4 / 6, 2 / 5, 1 / 4]
    assert math.isclose(result.score, (6 / 7 * 4 / 6 * 2 / 5 * 1 / 4) ** 0.25, rel_tol=1e-12)
    assert result.metadata["brevity_penalty"] == 1.0


async def test_bleu_case_sensitive() -> None:
    insensitive = await grade(SimilarityGrader("bleu"), "HELLO WORLD", "hello world")
    sensitive = await grade(SimilarityGrader("bleu", case_sensitive=True), "HELLO WORLD", "hello world")
    assert (insensitive.score, sensitive.score) == (1.0, 0.0)


async def test_rouge_l() -> None:
    result = await grade(SimilarityGrader("rouge_l"), "the cat sat on the mat", "the cat is on the mat")
    assert math.isclose(result.score, 5 / 6)
    assert result.metadata["lcs"] == 5


async def test_rouge_l_chinese_characters() -> None:
    result = await grade(SimilarityGrader("rouge_l"), "我爱北京", "我爱上海")
    assert result.score == 0.5


async def test_edit_distance() -> None:
    result = await grade(SimilarityGrader("edit_distance"), "kitten", "sitting")
    assert result.score == 1 - 3 / 7
    assert result.metadata["distance"] == 3
    composed = await grade(SimilarityGrader("edit_distance"), "cafe\u0301", "café")
    assert composed.score == 1.0
    emoji = await grade(SimilarityGrader("edit_distance"), "👍", "👎")
    assert emoji.score == 0.0


@pytest.mark.parametrize("metric", ["bleu", "rouge_l", "edit_distance"])
async def test_empty_texts(metric: SimilarityMetric) -> None:
    grader = SimilarityGrader(metric)
    assert (await grade(grader, "", "")).score == 1.0
    assert (await grade(grader, "", "abc")).score == 0.0
    assert (await grade(grader, "abc", "")).score == 0.0
    assert (await grade(grader, "same text", "same text")).score == 1.0


@pytest.mark.parametrize("metric", ["bleu", "rouge_l", "edit_distance"])
async def test_100k_characters_finish_quickly(metric: SimilarityMetric) -> None:
    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "delta", "北京", "😀", "naïve"]
    long_text = " ".join(rng.choice(words) for _ in range(17_000))[:100_000]
    edited = long_text[:60_000] + " inserted " + long_text[60_000:]
    reference = " ".join(rng.choice(words) for _ in range(300))
    start = time.perf_counter()
    near = await grade(SimilarityGrader(metric), edited, long_text)
    far = await grade(SimilarityGrader(metric), long_text, reference)
    assert near.score > 0.99
    assert far.score < 0.5
    assert time.perf_counter() - start < 5.0


async def test_max_length_truncates() -> None:
    grader = SimilarityGrader("edit_distance", max_length=3)
    result = await grade(grader, "abcXXXX", "abcYY")
    assert result.score == 1.0
    assert result.metadata["truncated"] is True


async def test_invalid_input() -> None:
    result = await SimilarityGrader().aevaluate(response="x", reference=None)  # type: ignore[arg-type]  # deliberately wrong
    assert isinstance(result, GraderError)
    assert result.kind == "invalid_input"
    assert "'reference'" in result.message


def test_bad_configuration() -> None:
    with pytest.raises(ValueError, match="metric"):
        SimilarityGrader("cosine")  # type: ignore[arg-type]  # deliberately wrong
    with pytest.raises(ValueError, match="max_length"):
        SimilarityGrader(max_length=0)


async def test_large_comparisons_run_in_a_worker_with_a_budget() -> None:
    rng = random.Random(5)
    a = "".join(rng.choice("ab") for _ in range(3000))
    b = "".join(rng.choice("ab") for _ in range(3000))
    grader = SimilarityGrader("edit_distance", timeout_s=60)
    result = await grader.aevaluate(response=a, reference=b)  # 9M cells: above the in-loop threshold
    assert isinstance(result, GraderScore)
    assert result.metadata["distance"] == levenshtein_distance(a, b)
    grader.workers.close()
    huge = "".join(rng.choice("abcdefgh") for _ in range(200_000))
    other = "".join(rng.choice("abcdefgh") for _ in range(200_000))
    tight = SimilarityGrader("edit_distance", timeout_s=0.5)
    await tight.workers.call("tests.graders.slow_functions:pid", [], timeout_s=60)  # start the worker first
    start = time.monotonic()
    slow = await tight.aevaluate(response=huge, reference=other)
    assert time.monotonic() - start < 0.5 + 2.0
    # The response made the check run away: its failure, scored at the bottom, not an error.
    assert isinstance(slow, GraderScore) and slow.score == 0.0
    assert slow.metadata["blame"] == "response" and slow.metadata["cause"] == "timeout"
    assert "set max_length" in slow.reason
    tight.workers.close()


async def test_long_bleu_runs_in_a_worker_with_the_same_result() -> None:
    rng = random.Random(9)
    words = [rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(120_000)]
    hyp, ref = " ".join(words), " ".join(reversed(words))
    grader = SimilarityGrader("bleu")
    result = await grader.aevaluate(response=hyp, reference=ref)  # 240,000 tokens: above the in-loop limit
    assert isinstance(result, GraderScore)
    assert result.score == pytest.approx(
        sentence_bleu(tokenize(hyp, lowercase=True), tokenize(ref, lowercase=True)).score
    )
    grader.workers.close()
