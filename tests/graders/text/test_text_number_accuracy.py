"""NumberAccuracyGrader: extraction, tolerant one-to-one matching, scoring modes."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openjudge.graders.base_grader import GraderError, GraderScore
from openjudge.graders.text import NumberAccuracyGrader
from openjudge.graders.text._number_accuracy import count_matches, extract_numbers

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("Sales rose 12.5% to $1,234 (from -3e2) in 2020-2021.", [12.5, 1234.0, -300.0, 2020.0, 2021.0]),
        ("", []),
        ("no digits here", []),
        ("x = -5, y = +2.5, z = .5", [-5.0, 2.5, 0.5]),
        ("温度是−3度，共有１２个", [-3.0, 12.0]),
        ("version 1.2.3", [1.2]),
        ("3-5 items", [3.0, 5.0]),
        ("1,2 and 1,234,567", [1.0, 2.0, 1234567.0]),
        ("6.02E23 atoms", [6.02e23]),
        ("overflow 1e999 then 7", [7.0]),
        ("It is 3.", [3.0]),
    ],
)
def test_extract_numbers(text: str, numbers: list[float]) -> None:
    assert extract_numbers(text) == numbers


def brute_force_matches(found: list[float], expected: list[float], abs_tol: float, rel_tol: float) -> int:
    best = 0
    for size in range(min(len(found), len(expected)), 0, -1):
        for refs in itertools.combinations(range(len(expected)), size):
            for xs in itertools.permutations(range(len(found)), size):
                if all(
                    abs(found[x] - expected[r]) <= max(abs_tol, rel_tol * abs(expected[r]))
                    for x, r in zip(xs, refs, strict=True)
                ):
                    return size
    return best


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-6, 6).map(lambda v: v / 2), max_size=5),
    st.lists(st.integers(-6, 6).map(lambda v: v / 2), max_size=5),
    st.sampled_from([0.0, 0.5, 1.0]),
    st.sampled_from([0.0, 0.3]),
)
def test_count_matches_is_a_maximum_matching(
    found: list[float], expected: list[float], abs_tol: float, rel_tol: float
) -> None:
    assert count_matches(found, expected, abs_tol, rel_tol) == brute_force_matches(
        found, expected, abs_tol, rel_tol
    )


async def grade(grader: NumberAccuracyGrader, response: str, reference: str) -> GraderScore:
    result = await grader.aevaluate(response=response, reference=reference)
    assert isinstance(result, GraderScore), result
    return result


async def test_recall_scoring() -> None:
    grader = NumberAccuracyGrader()
    result = await grade(grader, "The temperatures are 25.5 and 30.2 degrees", "25.5 and 30.0")
    assert result.score == 0.5
    assert result.metadata["matched"] == 1
    assert result.metadata["reference_numbers"] == [25.5, 30.0]
    assert result.metadata["response_numbers"] == [25.5, 30.2]
    assert (await grade(grader, "30.0 then 25.5 and also 99", "25.5, 30.0")).score == 1.0
    assert (await grade(grader, "no numbers", "42")).score == 0.0
    assert (await grade(grader, "42 42", "42 42 42")).score == 2 / 3


async def test_f1_and_all_scoring() -> None:
    f1 = NumberAccuracyGrader(scoring="f1")
    assert (await grade(f1, "1 2 3 4", "1 2")).score == pytest.approx(2 / 3)
    assert (await grade(f1, "7", "1 2")).score == 0.0
    strict = NumberAccuracyGrader(scoring="all")
    assert (await grade(strict, "1 and 2", "2, 1")).score == 1.0
    assert (await grade(strict, "1 and 3", "2, 1")).score == 0.0


async def test_tolerances() -> None:
    assert (await grade(NumberAccuracyGrader(abs_tol=0.1), "3.14", "3.14159")).score == 1.0
    assert (await grade(NumberAccuracyGrader(), "3.14", "3.14159")).score == 0.0
    assert (await grade(NumberAccuracyGrader(abs_tol=0, rel_tol=0.01), "1005", "1000")).score == 1.0
    assert (await grade(NumberAccuracyGrader(abs_tol=0, rel_tol=0.01), "1020", "1000")).score == 0.0


async def test_reference_without_numbers_is_invalid_input() -> None:
    result = await NumberAccuracyGrader().aevaluate(response="5", reference="none")
    assert isinstance(result, GraderError)
    assert result.kind == "invalid_input"
    assert "'reference'" in result.message


async def test_non_string_input_is_invalid() -> None:
    result = await NumberAccuracyGrader().aevaluate(response=5, reference="5")  # type: ignore[arg-type]  # deliberately wrong
    assert isinstance(result, GraderError)
    assert result.kind == "invalid_input"
    assert "'response'" in result.message


def test_bad_configuration_is_rejected() -> None:
    with pytest.raises(ValueError, match="abs_tol"):
        NumberAccuracyGrader(abs_tol=-1)
    with pytest.raises(ValueError, match="rel_tol"):
        NumberAccuracyGrader(rel_tol=float("nan"))
    with pytest.raises(ValueError, match="scoring"):
        NumberAccuracyGrader(scoring="mean")  # type: ignore[arg-type]  # deliberately wrong


async def test_long_input_metadata_is_capped() -> None:
    response = " ".join(str(i) for i in range(20_000))
    result = await grade(NumberAccuracyGrader(), response, "19999 and 0")
    assert result.score == 1.0
    assert result.metadata["response_count"] == 20_000
    numbers = result.metadata["response_numbers"]
    assert isinstance(numbers, list)
    assert len(numbers) == 50
