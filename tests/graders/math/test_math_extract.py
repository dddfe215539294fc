"""Final-answer extraction: boxes, answer tags, last numbers."""

from __future__ import annotations

import time

import pytest

from openjudge.graders.math._extract import extract_final_answer, extract_reference, last_boxed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"\boxed{42}", "42"),
        (r"first \boxed{1} then \boxed{2}", "2"),
        (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}"),
        (r"\boxed{\{1, 2\}}", r"\{1, 2\}"),
        (r"\boxed{a} and a truncated \boxed{\frac{1}{", "a"),
        (r"\fbox{7}", "7"),
        (r"\boxed 5$", "5"),
        (r"\boxed {x^{2}}", "x^{2}"),
        ("no box", None),
        (r"\boxedx{3}", None),
        (r"\boxed{", None),
    ],
)
def test_last_boxed(text: str, expected: str | None) -> None:
    assert last_boxed(text) == expected


@pytest.mark.parametrize(
    ("text", "answer", "source"),
    [
        (r"<answer>\boxed{3}</answer> \boxed{4}", "4", "boxed"),
        ("<answer>first</answer> ... <answer> 12 </answer>", " 12 ", "answer_tag"),
        ("<answer>unterminated", "", "none"),
        ("The total is 1,234.5 dollars.", "1,234.5", "last_number"),
        ("So x = -3.", "-3", "last_number"),
        ("ratio 3/4 overall", "3/4", "last_number"),
        (r"equals \frac{1}{2}", r"\frac{1}{2}", "last_number"),
        ("growth of 12%", "12%", "last_number"),
        ("答案是−5", "−5", "last_number"),
        ("2020-2021", "2021", "last_number"),
        ("no numbers at all", "", "none"),
        ("", "", "none"),
    ],
)
def test_extract_final_answer(text: str, answer: str, source: str) -> None:
    found = extract_final_answer(text)
    assert (found.text, found.source) == (answer, source)


def test_last_number_fallback_can_be_disabled() -> None:
    assert extract_final_answer("it is 5", fallback_to_last_number=False).source == "none"


def test_extract_reference() -> None:
    assert extract_reference("Janet has 3 eggs.\n#### 18") == " 18"
    assert extract_reference(r"so the answer is \boxed{\frac{3}{4}}.") == r"\frac{3}{4}"
    assert extract_reference("7") == "7"


def test_many_unbalanced_boxes_are_linear() -> None:
    text = r"\boxed{" * 20_000 + r"\boxed{9}"
    start = time.perf_counter()
    assert last_boxed(text) == "9"
    assert last_boxed(r"\boxed{" * 20_000) is None
    assert time.perf_counter() - start < 2.0
