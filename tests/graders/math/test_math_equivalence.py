"""MathAnswerEquivalenceGrader: numeric, string, element-wise and symbolic equivalence."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator

import pytest

from openjudge.graders.base_grader import GraderError, GraderScore
from openjudge.graders.math import MathAnswerEquivalenceGrader

pytestmark = pytest.mark.anyio


async def grade(grader: MathAnswerEquivalenceGrader, response: str, reference: str | float) -> GraderScore:
    result = await grader.aevaluate(response=response, reference=reference)
    assert isinstance(result, GraderScore), result
    assert result.score in (0.0, 1.0)
    return result


@pytest.mark.parametrize(
    ("response", "reference", "score", "method"),
    [
        (r"The answer is \boxed{\frac{1}{2}}.", "0.5", 1.0, "numeric"),
        (r"\boxed{\dfrac{1}{2}}", r"\frac12", 1.0, "string"),
        (r"\boxed{50\%}", "0.5", 1.0, "numeric"),
        (r"\boxed{50\%}", "50", 1.0, "numeric"),
        ("<answer>1,234</answer>", "1234", 1.0, "numeric"),
        ("So we get 42.", "#### 42", 1.0, "symbolic"),  # prose is read whole, by math-verify
        (r"\boxed{5 \text{ cm}}", "5", 1.0, "numeric"),
        (r"\boxed{90^\circ}", "90", 1.0, "string"),
        (r"\boxed{3.0}", "3", 1.0, "numeric"),
        (r"\boxed{-\frac{3}{4}}", "-0.75", 1.0, "numeric"),
        (r"\boxed{1.5\times 10^{3}}", "1500", 1.0, "numeric"),
        (r"\boxed{6.02e23}", r"6.02\times10^{23}", 1.0, "numeric"),
        (r"\boxed{x = 7}", "7", 1.0, "string"),
        (r"\boxed{\text{Monday}}", "monday", 1.0, "string"),
        (r"\boxed{0.333}", r"\frac{1}{3}", 0.0, "numeric"),
        (r"\boxed{1000001}", "1000000", 0.0, "numeric"),
        (r"\boxed{(1, 2)}", "(1,2)", 1.0, "string"),
        (r"\boxed{(2, 1)}", "(1,2)", 0.0, "symbolic"),
        (r"\boxed{(1,2]}", "(1,2)", 0.0, "symbolic"),
        (r"\boxed{3, 1}", "1, 3", 1.0, "elementwise"),
        (r"\boxed{\{0.5, 2\}}", r"\{2, \frac{1}{2}\}", 1.0, "elementwise"),
        (r"\boxed{(0.5, 1)}", r"(\frac{1}{2}, 1)", 1.0, "elementwise"),
        (r"\boxed{北京}", "北京", 1.0, "string"),
    ],
)
async def test_equivalence(response: str, reference: str, score: float, method: str) -> None:
    result = await grade(MathAnswerEquivalenceGrader(), response, reference)
    assert (result.score, result.metadata["method"]) == (score, method)


async def test_a_response_with_no_answer_scores_the_bottom() -> None:
    grader = MathAnswerEquivalenceGrader()
    result = await grade(grader, "no answer here", "3")
    assert result.score == 0.0
    if "method" in result.metadata:  # without math-verify: no number, no answer
        assert result.metadata["method"] == "none"
    else:  # math-verify read the text and found no answer in it: the response's failure
        assert (result.metadata["blame"], result.metadata["cause"]) == ("response", "unparseable")
    strict = await grade(MathAnswerEquivalenceGrader(extraction="strict"), "no answer here", "3")
    assert (strict.score, strict.metadata["method"]) == (0.0, "none")
    grader.workers.close()


async def test_numeric_reference_values() -> None:
    grader = MathAnswerEquivalenceGrader()
    assert (await grade(grader, r"\boxed{18}", 18)).score == 1.0
    assert (await grade(grader, r"\boxed{0.25}", 0.25)).score == 1.0
    assert (await grade(grader, r"\boxed{\frac{1}{4}}", 0.25)).score == 1.0


async def test_tolerance_is_configurable() -> None:
    loose = MathAnswerEquivalenceGrader(rel_tol=1e-3)
    assert (await grade(loose, r"\boxed{0.3333}", r"\frac{1}{3}")).score == 1.0


async def test_metadata_fields() -> None:
    result = await grade(MathAnswerEquivalenceGrader(), r"Thus $\boxed{x = \dfrac{3}{4}}$.", "0.75")
    assert dict(result.metadata) == {
        "extracted_from": "boxed",
        "extracted_answer": r"\frac{3}{4}",
        "reference_answer": "0.75",
        "method": "numeric",
    }


@pytest.fixture(scope="module")
def symbolic_grader() -> Iterator[MathAnswerEquivalenceGrader]:
    """One grader (one sympy worker process, started once) for the symbolic cases."""
    pytest.importorskip("sympy")
    grader = MathAnswerEquivalenceGrader()
    yield grader
    grader.workers.close()


@pytest.mark.parametrize(
    ("response", "reference", "score"),
    [
        (r"\boxed{\frac{\sqrt{2}}{2}}", r"\frac{1}{\sqrt{2}}", 1.0),
        (r"\boxed{2\sqrt{3}}", r"\sqrt{12}", 1.0),
        (r"\boxed{(x+1)^2}", "x^2+2x+1", 1.0),
        (r"\boxed{(x+1)^2}", "x^2+1", 0.0),
        (r"\boxed{2^{10}}", "1024", 1.0),
        (r"\boxed{\pi/2}", r"\frac{\pi}{2}", 1.0),
        (r"\boxed{(x+1)^{999}}", "x", 0.0),
    ],
)
async def test_symbolic_with_sympy(
    symbolic_grader: MathAnswerEquivalenceGrader, response: str, reference: str, score: float
) -> None:
    result = await grade(symbolic_grader, response, reference)
    assert (result.score, result.metadata["method"]) == (score, "symbolic")


async def test_without_math_verify_or_sympy_falls_back_to_strings(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes the import fail, as if the package were not installed.
    monkeypatch.setitem(sys.modules, "sympy", None)
    monkeypatch.setitem(sys.modules, "math_verify", None)
    monkeypatch.setattr("openjudge.graders.math._answer_equivalence.math_verify_available", lambda: False)
    monkeypatch.setattr("openjudge.graders.math._answer_equivalence.sympy_available", lambda: False)
    result = await grade(MathAnswerEquivalenceGrader(), r"\boxed{\frac{\sqrt{2}}{2}}", r"\frac{1}{\sqrt{2}}")
    assert (result.score, result.metadata["method"]) == (0.0, "string_no_sympy")
    numeric = await grade(MathAnswerEquivalenceGrader(), r"\boxed{\frac{1}{2}}", "0.5")
    assert (numeric.score, numeric.metadata["method"]) == (1.0, "numeric")


async def test_sympy_can_be_disabled() -> None:
    result = await grade(MathAnswerEquivalenceGrader(use_sympy=False), r"\boxed{\sqrt{4}}", "2")
    assert (result.score, result.metadata["method"]) == (0.0, "string_sympy_disabled")


async def test_long_inputs_are_fast() -> None:
    start = time.perf_counter()
    response = "thinking " * 12_000 + r"\boxed{7}"
    assert (await grade(MathAnswerEquivalenceGrader(), response, "7")).score == 1.0
    huge_box = r"\boxed{" + "12 ab " * 2_000 + "}"
    result = await grade(MathAnswerEquivalenceGrader(use_sympy=False), huge_box, "7")
    assert result.score == 0.0
    assert len(str(result.metadata["extracted_answer"])) == 200
    numbers = " ".join(["1"] * 50_000)
    assert (await grade(MathAnswerEquivalenceGrader(), numbers, "1")).score == 1.0
    assert time.perf_counter() - start < 5.0


@pytest.mark.parametrize(
    ("inputs", "field"),
    [
        ({"response": None, "reference": "1"}, "response"),
        ({"response": "1", "reference": None}, "reference"),
        ({"response": "1", "reference": True}, "reference"),
        ({"response": "1", "reference": float("inf")}, "reference"),
        ({"response": "1", "reference": "   "}, "reference"),
        ({"response": "1", "reference": ["1"]}, "reference"),
    ],
)
async def test_invalid_inputs(inputs: dict[str, object], field: str) -> None:
    result = await MathAnswerEquivalenceGrader().aevaluate(**inputs)  # type: ignore[arg-type]  # deliberately wrong
    assert isinstance(result, GraderError)
    assert result.kind == "invalid_input"
    assert f"'{field}'" in result.message


def test_bad_configuration() -> None:
    with pytest.raises(ValueError, match="abs_tol"):
        MathAnswerEquivalenceGrader(abs_tol=-1)
    with pytest.raises(ValueError, match="sympy_timeout_s"):
        MathAnswerEquivalenceGrader(sympy_timeout_s=0)


def test_rule_grader_imports_are_cheap() -> None:
    # Importing the rule graders must not pull in sympy or other heavy optional packages.
    import subprocess

    code = (
        "import sys\n"
        "import openjudge.graders.text, openjudge.graders.format, openjudge.graders.math, openjudge.graders.code\n"
        "print(sorted(m for m in ('sympy', 'numpy', 'jsonschema', 'mpmath') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_exponent_towers_are_refused_before_sympy() -> None:
    grader = MathAnswerEquivalenceGrader(sympy_timeout_s=30)
    start = time.monotonic()
    towers = (
        r"\boxed{9^{999}^{999}}",
        r"\boxed{9^{9^{9}}}",
        r"\boxed{2^{3}^{4}^{5}}",
        r"\boxed{\sin{(999^{999})^{999}}}",
    )
    for tower in towers:
        result = await grader.aevaluate(response=tower, reference="4")
        assert isinstance(result, GraderScore)
        assert result.score == 0.0
        assert (result.metadata["blame"], result.metadata["cause"]) == ("response", "exponent_tower")
    assert time.monotonic() - start < 1.0  # refused in the event loop: no worker is started
    bad_reference = await grader.aevaluate(response="4", reference=r"(999^{999})^{999}")
    assert isinstance(bad_reference, GraderError) and bad_reference.kind == "invalid_input"


class NeverDecides(MathAnswerEquivalenceGrader):
    symbolic_function = "tests.graders.slow_functions:never_decides_answers"


async def test_a_symbolic_comparison_past_its_budget_scores_the_bottom() -> None:
    grader = NeverDecides(sympy_timeout_s=1.0)
    await grader.workers.call("tests.graders.slow_functions:pid", [], timeout_s=60)  # start the worker first
    start = time.monotonic()
    result = await grader.aevaluate(response=r"\boxed{\sqrt{2}}", reference=r"\frac{2}{\sqrt{2}}")
    assert time.monotonic() - start < 1.0 + 0.5
    assert isinstance(result, GraderScore)
    assert result.score == 0.0
    assert (result.metadata["blame"], result.metadata["cause"]) == ("response", "timeout")
    assert "exceeded the 1 s budget" in result.reason
    ordinary = await grader.aevaluate(response=r"\boxed{12}", reference="12")  # no symbolic step: no worker
    assert isinstance(ordinary, GraderScore) and ordinary.score == 1.0
    grader.workers.close()
