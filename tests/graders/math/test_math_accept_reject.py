"""Answers the math grader must accept and must reject (false accepts included), and adversarial inputs."""

from __future__ import annotations

from collections.abc import Iterator
from math import factorial

import pytest

from openjudge.graders.base_grader import GraderScore
from openjudge.graders.math import MathAnswerEquivalenceGrader

pytestmark = pytest.mark.anyio
pytest.importorskip("math_verify")


@pytest.fixture(scope="module")
def grader() -> Iterator[MathAnswerEquivalenceGrader]:
    grader = MathAnswerEquivalenceGrader()
    yield grader
    grader.workers.close()


async def score(grader: MathAnswerEquivalenceGrader, response: str, reference: str) -> GraderScore:
    result = await grader.aevaluate(response=response, reference=reference)
    assert isinstance(result, GraderScore), result
    return result


@pytest.mark.parametrize(
    ("reference", "response"),
    [
        ("$[0,1)$", "$[0,1)$"),
        ("$12:00$", "$12:00$"),
        ("$$f(y) = y$$", "$$f(y) = y$$"),
        (r"$\frac{1}{3}$", r"$\frac13$"),
        (r"$\sqrt{3}$", r"$\sqrt3$"),
        (r"$\frac{1}{2}$", r"$\cfrac{1}{2}$"),
        (r"$x \geq 5$", "$x >= 5$"),
        (r"$5 \geq x$", r"$x \leq 5$"),
        (r"$\text{E}$", "$E$"),
        (r"$(1,\frac{9}{2})$", "$(1,4.5)$"),
        (r"$\tan^2(y)+1$", r"$\sec^2(y)$"),
        (r"\begin{pmatrix}1&2\\3&4\end{pmatrix}", r"\begin{bmatrix} 1 & 2 \\ 3 & 4 \end{bmatrix}"),
        (r"$\{1,2,3\}$", r"\boxed{1}, \boxed{2}, \boxed{3}"),
        ("$(p,q)=(3,2)$", "$(3,2)$"),
        # Held-out misses of math-verify and of sympy alone.
        ("x^2+2x+1", "x^2 + 2*x + 1"),
        (r"\frac{1}{2}", r"\frac12"),
        ("1+x", "x+1"),
        (r"\left(1, 2\right)", r"\left(1, 2\right)"),
        ("1000", "10^3"),
        ("0.335", r"33.5\%"),
        ("1234", r"1\,234"),
        ("2=x", "x=2"),
        ("4210_{7}", "4210_7"),
    ],
)
async def test_correct_answers_are_accepted(
    grader: MathAnswerEquivalenceGrader, reference: str, response: str
) -> None:
    assert (await score(grader, response, reference)).score == 1.0


@pytest.mark.parametrize(
    ("reference", "response"),
    [
        ("2", "AZYUK2A"),
        ("$2$", r"$\frac{1+\sqrt{5}}{2}$"),
        ("32349", r"\boxed{32, 349}"),
        ("100000000000", "99999999999"),
        # Infinity equals only the same infinity.
        ("5", r"\boxed{\infty}"),
        (r"\frac12", r"\boxed{\infty}"),
        ("x^2+1", r"\boxed{\infty}"),
        ("#### 18", r"\boxed{\infty}"),
        ("5", r"\boxed{-\infty}"),
        (r"\infty", r"\boxed{-\infty}"),
        # Integer references compare exactly; a tolerance only where a decimal is involved.
        ("2^{40}", "1099511627000"),
        ("1099511627776", "1099511627000"),
        (str(factorial(20)), str(round(factorial(20), -5))),
    ],
)
async def test_wrong_answers_are_rejected(
    grader: MathAnswerEquivalenceGrader, reference: str, response: str
) -> None:
    assert (await score(grader, response, reference)).score == 0.0


async def test_the_same_infinity_is_accepted(grader: MathAnswerEquivalenceGrader) -> None:
    assert (await score(grader, r"\boxed{\infty}", r"\infty")).score == 1.0
    assert (await score(grader, r"\boxed{-\infty}", r"-\infty")).score == 1.0
    assert (await score(grader, r"\boxed{[0, \infty)}", r"[0,\infty)")).score == 1.0


async def test_decimals_use_the_tolerance(grader: MathAnswerEquivalenceGrader) -> None:
    assert (await score(grader, r"\boxed{1099511627776.0000000001}", "1099511627776")).score == 1.0
    assert (await score(grader, r"\boxed{0.0833333333333333}", r"\frac{1}{12}")).score == 1.0


async def test_hidden_tower_is_refused_before_sympy(grader: MathAnswerEquivalenceGrader) -> None:
    result = await score(grader, r"\boxed{\sin{(999^{999})^{999}}}", "0")
    assert result.score == 0.0
    assert result.metadata["cause"] == "exponent_tower"


async def test_strict_extraction_needs_a_box_or_tag() -> None:
    strict = MathAnswerEquivalenceGrader(extraction="strict", use_sympy=False)
    assert (await score(strict, "The answer is 4.", "4")).score == 0.0
    assert (await score(strict, r"The answer is \boxed{4}.", "4")).score == 1.0
    assert (await score(strict, "<answer>4</answer>", "4")).score == 1.0
    last = MathAnswerEquivalenceGrader(use_sympy=False)
    assert (await score(last, "The answer is 4.", "4")).score == 1.0


async def test_answers_inside_the_reasoning_do_not_count(grader: MathAnswerEquivalenceGrader) -> None:
    assert (await score(grader, r"<think> it is \boxed{42} </think> so 43", "42")).score == 0.0
    assert (await score(grader, r"<think> still thinking \boxed{42}", "42")).score == 0.0
    assert (await score(grader, r"<think> hmm </think> \boxed{42}", "42")).score == 1.0


async def test_ordinary_answers_stay_in_the_event_loop() -> None:
    grader = MathAnswerEquivalenceGrader()
    for response, reference in (("42", "42"), (r"\boxed{\frac{1}{2}}", "0.5"), ("1,234", "1234")):
        result = await score(grader, response, reference)
        assert (result.score, result.metadata["method"]) in ((1.0, "string"), (1.0, "numeric"))
    assert grader.workers._idle == []  # no worker process was ever started
