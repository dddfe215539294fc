"""One answer per response: no response is accepted for two different references.

The property: for any response R and two references A and B of different values, R is never
accepted against both. Responses are built from what a policy can mix (boxes, answer tags,
"the answer is X", "not Y", trailing numbers, LaTeX and plain syntax, several boxes,
reasoning blocks); the references from a pool of values that are pairwise different, each
written several ways. Percentages (read as ``p`` and ``p/100``), unit words and decimals
within tolerance are the grader's documented leniencies and stay out of the pool.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from openjudge.graders.math import MathAnswerEquivalenceGrader
from openjudge.graders.math._plain import parse_plain
from openjudge.results import GraderError, GraderResult, GraderScore

pytest.importorskip("math_verify")

# Each value: spellings that mean it (LaTeX and plain syntax). No two values are equal.
VALUES: list[tuple[str, ...]] = [
    ("5", "5.0", r"\frac{10}{2}"),
    ("7", "7", r"\frac{14}{2}"),
    ("-3", "-3", r"-\frac{6}{2}"),
    ("12", "12", "12"),
    (r"\frac{1}{2}", "0.5", "1/2"),
    (r"\frac{3}{4}", "0.75", "3/4"),
    (r"\sqrt{2}", "sqrt(2)", "2**(1/2)"),
    (r"\sqrt{3} - 1", "-1 + sqrt(3)", r"\sqrt{3}-1"),
    (r"\frac{3\sqrt{5}}{7}", "(3*sqrt(5))/7", "3*sqrt(5)/7"),
    (r"\pi", r"\pi", "pi"),
    ("x + 1", "1 + x", "x+1"),
    ("2x", "2*x", "2 x"),
    ("x^2", "x**2", "x^{2}"),
    ("(1, 2)", "(1,2)", r"\left(1, 2\right)"),
    (r"\{1, 2, 3\}", r"\{3, 2, 1\}", r"\{1,2,3\}"),
    ("[0, 1]", "[0,1]", r"\left[0, 1\right]"),
    (r"\infty", r"\infty", r"+\infty"),
]


def spelled(value: int) -> st.SearchStrategy[str]:
    return st.sampled_from(VALUES[value])


def segment(value: int, other: int) -> st.SearchStrategy[str]:
    """One piece of a response that states (or mentions) ``value``, sometimes ``other`` too."""
    v, o = spelled(value), spelled(other)
    one = st.one_of(
        v.map(lambda a: rf"\boxed{{{a}}}"),
        v.map(lambda a: f"<answer>{a}</answer>"),
        v.map(lambda a: f"The answer is {a}."),
        v.map(lambda a: f"The answer is ${a}$."),
        v.map(lambda a: f"Final Answer: The final answer is ${a}$. I hope it is correct."),
        v.map(lambda a: f"so we get {a}"),
        v.map(lambda a: f"${a}$"),
        v,
        v.map(lambda a: f"<think>maybe \\boxed{{{a}}}</think>"),
    )
    two = st.tuples(v, o).flatmap(
        lambda p: st.sampled_from(
            [
                f"The answer is {p[0]}, not {p[1]}.",
                f"The answer is ${p[0]}$, not ${p[1]}$.",
                rf"\boxed{{{p[0]}}}, \boxed{{{p[1]}}}",
                rf"\boxed{{{p[0]}}} and then \boxed{{{p[1]}}}",
                rf"\boxed{{{p[0]}}} \boxed{{{p[0]}}} The final answer is ${p[1]}$",
                f"<answer>{p[0]}</answer> so \\boxed{{{p[1]}}}",
                f"{p[0]} or maybe {p[1]}",
                f"The answer is {p[0]}. Actually it is {p[1]}.",
            ]
        )
    )
    filler = st.sampled_from(["Let me think.", "We have 3 apples and 4 pears.", "Check: 2 + 2 = 4.", "\n"])
    return st.one_of(one, two, two, filler)


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, str, str]:
    """(response, reference A, reference B): A and B of different values, both likely named in R."""
    a, b = draw(st.lists(st.integers(0, len(VALUES) - 1), min_size=2, max_size=2, unique=True))
    named = st.sampled_from([a, b])  # a response that names both references is where two readings hide
    pieces = draw(st.lists(st.tuples(named, named).flatmap(lambda p: segment(*p)), min_size=1, max_size=2))
    separator = draw(st.sampled_from([" ", "\n", " Hmm. ", "\n\n"]))
    return separator.join(pieces), draw(spelled(a)), draw(spelled(b))


@pytest.fixture(scope="module")
def graders() -> Iterator[list[MathAnswerEquivalenceGrader]]:
    made = [MathAnswerEquivalenceGrader(sympy_timeout_s=10), MathAnswerEquivalenceGrader(extraction="strict")]
    yield made
    for grader in made:
        grader.workers.close()


def accepted(result: GraderResult) -> bool:
    assert not isinstance(result, GraderError) or result.kind != "internal", result
    return isinstance(result, GraderScore) and result.score == 1.0


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
@example(case=("The answer is 5, not 7.", "5", "7"))
@example(case=(r"\boxed{3} \boxed{3} The final answer is $5$", "3", "5"))
@example(case=(r"\boxed{1}, \boxed{2}, \boxed{3}", r"\{1,2,3\}", "3"))
@example(case=(r"<answer>5</answer> so \boxed{3}", "5", "3"))
@example(case=("The answer is $5$. Actually it is $7$.", "5", "7"))
@example(  # math-verify's fallback text is the first match's, not the answer's
    case=(
        "Final Answer: The final answer is $x**2$. I hope it is correct.\n\nThe answer is $+\\infty$.",
        r"\infty",
        "x**2",
    )
)
def test_no_response_is_accepted_for_two_different_references(
    case: tuple[str, str, str], graders: list[MathAnswerEquivalenceGrader]
) -> None:
    response, reference_a, reference_b = case

    async def both(grader: MathAnswerEquivalenceGrader) -> tuple[GraderResult, GraderResult]:
        first = await grader.aevaluate(response=response, reference=reference_a)
        second = await grader.aevaluate(response=response, reference=reference_b)
        return first, second

    for grader in graders:
        first, second = anyio.run(both, grader)
        assert not (accepted(first) and accepted(second)), (grader.extraction, response, first, second)


# -- the members of the class named in the issue, and what the policy reads ---------------------


@pytest.fixture(scope="module")
def grader() -> Iterator[MathAnswerEquivalenceGrader]:
    made = MathAnswerEquivalenceGrader()
    yield made
    made.workers.close()


async def score(grader: MathAnswerEquivalenceGrader, response: str, reference: str) -> GraderScore:
    result = await grader.aevaluate(response=response, reference=reference)
    assert isinstance(result, GraderScore), result
    return result


@pytest.mark.anyio
@pytest.mark.parametrize("reference", ["5", "7"])
async def test_an_answer_and_a_different_trailing_number_conflict(
    grader: MathAnswerEquivalenceGrader, reference: str
) -> None:
    result = await score(grader, "The answer is 5, not 7.", reference)
    assert (result.score, result.metadata["blame"], result.metadata["cause"]) == (
        0.0,
        "response",
        "conflicting_answers",
    )


@pytest.mark.anyio
async def test_a_box_and_an_answer_tag_that_disagree_conflict(grader: MathAnswerEquivalenceGrader) -> None:
    for reference in ("3", "5"):
        result = await score(grader, r"<answer>5</answer> so \boxed{3}", reference)
        assert (result.score, result.metadata["cause"]) == (0.0, "conflicting_answers")
    agreeing = await score(grader, r"<answer>0.5</answer> so \boxed{\frac{1}{2}}", "1/2")
    assert agreeing.score == 1.0


@pytest.mark.anyio
async def test_strict_reads_only_boxes_and_tags_on_every_path() -> None:
    strict = MathAnswerEquivalenceGrader(extraction="strict")
    response = r"\boxed{3} and \boxed{3}. The final answer is $5$."
    assert (await score(strict, response, "3")).score == 1.0
    assert (await score(strict, response, "5")).score == 0.0
    several = r"\boxed{1}, \boxed{2}. The final answer is $5$."
    assert (await score(strict, several, r"\{1, 2\}")).score == 1.0
    assert (await score(strict, several, "5")).score == 0.0
    assert (await score(strict, "The answer is 5.", "5")).metadata["method"] == "none"
    strict.workers.close()


@pytest.mark.anyio
async def test_several_boxes_are_one_list_answer(grader: MathAnswerEquivalenceGrader) -> None:
    response = r"\boxed{1}, \boxed{2}, \boxed{3}"
    assert (await score(grader, response, r"\{1,2,3\}")).score == 1.0
    assert (await score(grader, response, "3")).score == 0.0
    assert (await score(grader, r"\boxed{3} \boxed{3}", "3")).score == 1.0  # repeats are one answer


@pytest.mark.anyio
async def test_a_final_answer_after_the_boxes_is_the_answer(grader: MathAnswerEquivalenceGrader) -> None:
    response = (
        r"$0.04 \cdot 5000 = \boxed{200}$, then $\boxed{255}$. Final Answer: The final answer is $10455$."
    )
    assert (await score(grader, response, "10455")).score == 1.0
    assert (await score(grader, response, "255")).score == 0.0


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("response", "reference"),
    [
        ("-1 + sqrt(3)", r"\sqrt{3} - 1"),
        ("(3*sqrt(5))/7", r"\frac{3\sqrt{5}}{7}"),
        ("2**(1/4)", r"\sqrt{\sqrt{2}}"),
        (r"\boxed{sqrt(2)/2}", r"\frac{\sqrt{2}}{2}"),
        ("2sqrt(3)", r"2\sqrt{3}"),
        ("sqrt 3", r"\sqrt{3}"),
        ("x**2 + 2*x + 1", "(x+1)^2"),
        ("pi/2", r"\frac{\pi}{2}"),
        ("sqrt(2), -sqrt(2)", r"\pm\sqrt{2}"),
    ],
)
async def test_plain_syntax_answers_are_read(
    grader: MathAnswerEquivalenceGrader, response: str, reference: str
) -> None:
    assert (await score(grader, response, reference)).score == 1.0
    assert (await score(grader, response, "7")).score == 0.0


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("hostile", "value_if_evaluated"),
    [("(2).__add__(3)", "5"), ("pow(2, 10)", "1024"), ("sum([1, 2, 3])", "6"), ("sqrt(16).__class__", "4")],
)
async def test_plain_syntax_never_evaluates_python(
    grader: MathAnswerEquivalenceGrader, hostile: str, value_if_evaluated: str
) -> None:
    assert parse_plain(hostile) is None
    assert (await score(grader, rf"\boxed{{{hostile}}}", value_if_evaluated)).score == 0.0


FUNCTIONS = [r"\gcd", r"\operatorname{lcm}", r"\max", r"\min", r"\operatorname{mod}", r"\binom", ""]
ARGUMENTS = st.lists(st.sampled_from(["4", "6", "x", "-1", r"\frac{1}{2}", "y"]), min_size=1, max_size=3)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    function=st.sampled_from(FUNCTIONS),
    arguments=ARGUMENTS,
    relation=st.sampled_from(["", " > 2", " = 2", r" \leq x", " < y"]),
    reference=st.sampled_from(["2", "12", "x", "x > 2", r"\frac{1}{2}"]),
)
def test_undecidable_truth_values_are_never_internal_errors(
    function: str, arguments: list[str], relation: str, reference: str, grader: MathAnswerEquivalenceGrader
) -> None:
    """Any sympy object whose truth value is undefined (relationals, unevaluated calls) is not equal, never a crash."""
    answer = f"{function}({', '.join(arguments)}){relation}" if function else f"{arguments[0]}{relation}"
    result = anyio.run(lambda: grader.aevaluate(response=rf"\boxed{{{answer}}}", reference=reference))
    assert isinstance(result, GraderScore), result
    assert result.score in (0.0, 1.0)


@pytest.mark.anyio
async def test_gcd_is_its_value(grader: MathAnswerEquivalenceGrader) -> None:
    assert (await score(grader, r"\boxed{\gcd(4,6)}", "2")).score == 1.0
    assert (await score(grader, r"\boxed{\gcd(4,6)}", "3")).score == 0.0


@pytest.mark.anyio
async def test_a_number_is_never_also_a_list(grader: MathAnswerEquivalenceGrader) -> None:
    """``1,000`` reads as 1000 in the event loop; it is not also the pair ``1, 0`` (one reading per answer)."""
    assert (await score(grader, r"\boxed{1,000}", "1000")).score == 1.0
    assert (await score(grader, r"\boxed{1,000}", "1, 0")).score == 0.0
    assert (await score(grader, r"\boxed{1, 0}", "1,000")).score == 0.0
    assert (await score(grader, r"\boxed{3, 1}", "1, 3")).score == 1.0  # a list is still a list
