"""string_check and text_similarity with OpenAI's documented semantics (the guide's own examples included)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from nltk.translate.bleu_score import sentence_bleu  # type: ignore[import-untyped]  # no py.typed
from nltk.translate.gleu_score import sentence_gleu  # type: ignore[import-untyped]  # no py.typed
from rapidfuzz import fuzz, utils
from rouge_score.rouge_scorer import RougeScorer  # type: ignore[import-untyped]  # no py.typed

from openjudge.graders import from_openai_grader
from tests.graders.openai.helpers import error_of, grade, score_of, string_check


@pytest.mark.parametrize(
    ("operation", "output", "reference", "reward"),
    [
        ("eq", "Paris", "Paris", 1.0),
        ("eq", "paris", "Paris", 0.0),  # case-sensitive
        ("eq", "Paris ", "Paris", 0.0),  # no stripping
        ("ne", "Lyon", "Paris", 1.0),
        ("ne", "Paris", "Paris", 0.0),
        ("like", "The capital is Paris.", "Paris", 1.0),  # contains, case-sensitive
        ("like", "the capital is paris.", "Paris", 0.0),
        ("ilike", "THE CAPITAL IS PARIS.", "Paris", 1.0),  # contains, any case
        ("ilike", "Lyon", "Paris", 0.0),
        ("like", "anything", "", 1.0),  # the empty string is in every string
    ],
)
def test_string_check(operation: str, output: str, reference: str, reward: float) -> None:
    grader = from_openai_grader(string_check(operation))
    assert score_of(grade(grader, response=output, reference_answer=reference)) == reward


def similarity(metric: str, **extra: object) -> dict[str, object]:
    return {
        "type": "text_similarity",
        "name": "sim",
        "input": "{{ sample.output_text }}",
        "reference": "{{ item.reference_answer }}",
        "evaluation_metric": metric,
        **extra,
    }


HYP = "the cat sat on the red mat today"
REF = "the cat sat on the mat"


def _bleu(hyp: Sequence[str], ref: Sequence[str]) -> float:
    return float(sentence_bleu([list(ref)], list(hyp)))


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        ("fuzzy_match", fuzz.WRatio(HYP, REF, processor=utils.default_process) / 100),
        ("bleu", _bleu(HYP.split(), REF.split())),
        ("gleu", sentence_gleu([REF.split()], HYP.split())),
        ("rouge_1", RougeScorer(["rouge1"]).score(REF, HYP)["rouge1"].fmeasure),
        ("rouge_2", RougeScorer(["rouge2"]).score(REF, HYP)["rouge2"].fmeasure),
        ("rouge_5", RougeScorer(["rouge5"]).score(REF, HYP)["rouge5"].fmeasure),
        ("rouge_l", RougeScorer(["rougeL"]).score(REF, HYP)["rougeL"].fmeasure),
    ],
)
def test_similarity_is_the_librarys_metric(metric: str, expected: float) -> None:
    grader = from_openai_grader(similarity(metric))
    result = grade(grader, response=HYP, reference_answer=REF)
    assert score_of(result) == pytest.approx(expected)
    assert 0.0 < expected < 1.0


def test_hand_computed_values() -> None:
    # ROUGE-1: 6 of 8 hypothesis words and 6 of 6 reference words match: F1 = 2PR/(P+R) = 6/7.
    assert score_of(
        grade(from_openai_grader(similarity("rouge_1")), response=HYP, reference_answer=REF)
    ) == pytest.approx(6 / 7)
    # ROUGE-L: the longest common subsequence "the cat sat on the mat" (6 words): the same 6/7.
    assert score_of(
        grade(from_openai_grader(similarity("rouge_l")), response=HYP, reference_answer=REF)
    ) == pytest.approx(6 / 7)
    # BLEU without smoothing: no 4-gram in common gives (nearly) 0, as in NLTK.
    assert (
        score_of(grade(from_openai_grader(similarity("bleu")), response="cat on mat", reference_answer=REF))
        < 1e-9
    )


@pytest.mark.parametrize("metric", ["fuzzy_match", "bleu", "gleu", "meteor", "rouge_1", "rouge_3", "rouge_l"])
def test_identical_texts_score_one(metric: str) -> None:
    text = "the quick brown fox jumps over the lazy dog"
    result = grade(from_openai_grader(similarity(metric)), response=text, reference_answer=text)
    assert score_of(result) == pytest.approx(1.0, abs=1e-3)  # METEOR's fragmentation penalty leaves 0.9993


def test_meteor_without_wordnet_says_so() -> None:
    result = grade(
        from_openai_grader(similarity("meteor")), response="the cat sat", reference_answer="the cat sat"
    )
    assert "meteor_synonyms" in result.metadata


def test_pass_threshold_is_reported_not_applied() -> None:
    grader = from_openai_grader(similarity("rouge_1", pass_threshold=0.9))
    result = grade(grader, response=HYP, reference_answer=REF)
    assert result.metadata["passed"] is False and score_of(result) == pytest.approx(6 / 7)


def test_cosine_needs_an_embedder_and_uses_it() -> None:
    with pytest.raises(ValueError, match="openjudge has no embeddings provider yet"):
        from_openai_grader(similarity("cosine"))

    async def embed(texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0] if "cat" in t else [1.0, 1.0] for t in texts]

    grader = from_openai_grader(similarity("cosine"), embedder=embed)
    assert score_of(grade(grader, response="a cat", reference_answer="a cat")) == pytest.approx(1.0)
    assert score_of(grade(grader, response="a cat", reference_answer="a dog")) == pytest.approx(2**-0.5)


def test_hostile_text_is_still_a_score() -> None:
    grader = from_openai_grader(similarity("rouge_l"))
    huge = "\udc80 " * 30_000  # lone surrogates, long enough to run in a worker thread
    result = grade(grader, response=huge, reference_answer=REF)
    assert score_of(result) == 0.0 and result.metadata["truncated_to_chars"] == 50_000
    # METEOR aligns every word pair: a long response is cut first, so it stays a quick score.
    meteor = from_openai_grader(similarity("meteor"))
    assert 0.0 < score_of(grade(meteor, response="the cat sat " * 20_000, reference_answer=REF)) < 0.1


def test_missing_reference_is_the_datasets_error() -> None:
    err = error_of(grade(from_openai_grader(string_check("eq")), response="x", question="q"))
    assert err.kind == "invalid_input" and "invalid_variable_error" in err.message
