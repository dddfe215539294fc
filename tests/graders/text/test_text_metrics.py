"""Edit distance, LCS, ROUGE-L and BLEU: exact values, agreement with naive DP, and speed."""

from __future__ import annotations

import math
import random
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from openjudge.graders.text._metrics import (
    edit_similarity,
    lcs_length,
    levenshtein_distance,
    rouge_l,
    sentence_bleu,
)


def naive_levenshtein(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def naive_lcs(a: str, b: str) -> int:
    previous = [0] * (len(b) + 1)
    for ca in a:
        current = [0]
        for j, cb in enumerate(b, 1):
            current.append(previous[j - 1] + 1 if ca == cb else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def test_levenshtein_known_values() -> None:
    assert levenshtein_distance("kitten", "sitting") == 3
    assert levenshtein_distance("", "") == 0
    assert levenshtein_distance("", "abc") == 3
    assert levenshtein_distance("abc", "") == 3
    assert levenshtein_distance("flaw", "lawn") == 2
    assert levenshtein_distance("北京欢迎你", "北京欢迎您") == 1
    assert levenshtein_distance(["the", "cat"], ["the", "dog", "cat"]) == 1


def test_edit_similarity_values() -> None:
    assert edit_similarity("", "") == 1.0
    assert edit_similarity("abc", "") == 0.0
    assert edit_similarity("kitten", "sitting") == 1 - 3 / 7
    assert edit_similarity("same", "same") == 1.0


def test_lcs_known_values() -> None:
    assert lcs_length("ABCBDAB", "BDCABA") == 4
    assert lcs_length("", "abc") == 0
    assert lcs_length("abc", "abc") == 3
    assert lcs_length("abc", "xyz") == 0


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abcé中", max_size=25), st.text(alphabet="abcé中", max_size=25))
def test_bit_parallel_matches_naive_dp(a: str, b: str) -> None:
    assert levenshtein_distance(a, b) == naive_levenshtein(a, b)
    assert lcs_length(a, b) == naive_lcs(a, b)


def test_rouge_l_values() -> None:
    hyp = ["the", "cat", "sat", "on", "the", "mat"]
    ref = ["the", "cat", "is", "on", "the", "mat"]
    score = rouge_l(hyp, ref)
    assert score.lcs == 5
    assert score.precision == 5 / 6
    assert score.recall == 5 / 6
    assert math.isclose(score.f1, 5 / 6)
    assert rouge_l([], []).f1 == 1.0
    assert rouge_l(["a"], []).f1 == 0.0
    assert rouge_l([], ["a"]).f1 == 0.0
    assert rouge_l(["a", "b"], ["c"]).f1 == 0.0
    short = rouge_l(["a"], ["a", "b", "c", "d"])
    assert (short.precision, short.recall) == (1.0, 0.25)
    assert math.isclose(short.f1, 0.4)


def test_bleu_values_match_sacrebleu() -> None:
    # Reference values computed with sacrebleu 2.6 sentence_bleu(tokenize="none") / 100.
    bleu = sentence_bleu(["the", "cat", "sat", "on", "the", "mat"], ["the", "cat", "is", "on", "the", "mat"])
    assert math.isclose(bleu.score, 0.3799178428257963, rel_tol=1e-12)
    assert bleu.precisions == (5 / 6, 3 / 5, 1 / 4, 1 / 6)
    assert bleu.brevity_penalty == 1.0
    assert math.isclose(sentence_bleu(["a"], ["a", "b"]).score, 0.36787944117144233, rel_tol=1e-12)
    assert math.isclose(sentence_bleu(["a", "b"], ["b", "a"]).score, 0.7071067811865476, rel_tol=1e-12)


def test_bleu_degenerate_cases() -> None:
    assert sentence_bleu([], []).score == 1.0
    assert sentence_bleu([], ["a"]).score == 0.0
    assert sentence_bleu(["a"], []).score == 0.0
    assert sentence_bleu(["a", "b", "c", "d"], ["e", "f", "g", "h"]).score == 0.0
    assert sentence_bleu(["a", "b", "c", "d"], ["a", "b", "c", "d"]).score == 1.0


def test_long_inputs_are_fast() -> None:
    rng = random.Random(7)
    long_text = "".join(rng.choice("abcdefgh ") for _ in range(100_000))
    edited = long_text[:50_000] + "Z" + long_text[50_001:]
    short = "".join(rng.choice("abcdefgh ") for _ in range(2_000))
    start = time.perf_counter()
    assert levenshtein_distance(long_text, edited) == 1
    assert lcs_length(long_text, edited) == 99_999
    assert 98_000 <= levenshtein_distance(long_text, short) <= 100_000
    tokens = long_text.split()
    assert sentence_bleu(tokens, tokens).score == 1.0
    assert rouge_l(tokens, tokens[:-1]).recall == 1.0
    assert time.perf_counter() - start < 5.0
