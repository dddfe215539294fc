"""Test-case model, code extraction and output comparison (no processes started)."""

from __future__ import annotations

import time

import pytest
from pydantic import ValidationError

from openjudge.graders.code import CallCheck, CodeTestCase
from openjudge.graders.code._code_execution import _outputs_match, extract_code


def test_aliases_and_defaults() -> None:
    case = CodeTestCase.model_validate({"input": "1 2\n", "output": "3\n"})
    assert (case.stdin, case.expected_stdout, case.test) == ("1 2\n", "3\n", None)
    assert CodeTestCase.model_validate({"expected_output": "x"}).stdin == ""
    assert CodeTestCase(test="assert True").expected_stdout is None


def test_a_check_is_required() -> None:
    with pytest.raises(ValidationError, match="expected_stdout"):
        CodeTestCase(stdin="1")
    with pytest.raises(ValidationError):
        CodeTestCase.model_validate({"output": "1", "bogus": 2})


def test_from_io_lists() -> None:
    cases = CodeTestCase.from_io_lists(["1", "2"], ["2", "4"])
    assert [(c.stdin, c.expected_stdout) for c in cases] == [("1", "2"), ("2", "4")]
    with pytest.raises(ValueError, match="2 inputs but 1 outputs"):
        CodeTestCase.from_io_lists(["1", "2"], ["2"])


def test_functional_io_lists_become_call_checks() -> None:
    [case] = CodeTestCase.from_io_lists(["[2, 7, 11]\n9\n"], ["[0, 1]"], fn_name="twoSum")
    assert case.call == CallCheck(function="twoSum", args=[[2, 7, 11], 9], expected=[0, 1])
    with pytest.raises(ValueError, match="test 0: functional inputs and outputs must be JSON"):
        CodeTestCase.from_io_lists(["not json"], ["1"], fn_name="f")


def test_call_checks_validate() -> None:
    case = CodeTestCase.model_validate({"call": {"fn_name": "f", "expected": None}})
    assert case.call is not None and (case.call.function, case.call.args, case.call.expected) == (
        "f",
        [],
        None,
    )
    with pytest.raises(ValidationError, match="expected"):
        CodeTestCase.model_validate({"call": {"function": "f"}})
    with pytest.raises(ValidationError, match="identifier"):
        CodeTestCase.model_validate({"call": {"function": "os.system", "expected": 0}})


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("print(1)", "print(1)"),
        ("Here:\n```python\nprint(1)\n```\nDone.", "print(1)\n"),
        ("```py\na=1\n```\n```python\nb=2\n```", "b=2\n"),
        ("```\nplain=1\n```", "plain=1\n"),
        ("```bash\nls\n```\n```\nx=1\n```", "x=1\n"),
        ("```bash\nls\n```", "```bash\nls\n```"),
    ],
)
def test_extract_code(text: str, code: str) -> None:
    assert extract_code(text) == code


@pytest.mark.parametrize("piece", ["```python", "```\n", "```py```\n", "`" * 7])
def test_extract_code_is_linear_on_hostile_text(piece: str) -> None:
    text = piece * 200_000  # the old regex took minutes on "```python" repeated
    start = time.process_time()
    extract_code(text)
    assert time.process_time() - start < 5.0


@pytest.mark.parametrize(
    ("got", "want", "mode", "same"),
    [
        ("3\n", "3", "lines", True),
        ("3  \r\n4\n\n", "3\n4", "lines", True),
        ("3 4", "3\n4", "lines", False),
        ("3 4", "3\n4", "tokens", True),
        ("3\n", "3", "exact", False),
        ("北京\n", "北京", "lines", True),
        ("", "", "lines", True),
        ("\n\n", "", "lines", True),
    ],
)
def test_outputs_match(got: str, want: str, mode: str, same: bool) -> None:
    assert _outputs_match(got, want, mode) is same  # type: ignore[arg-type]  # mode strings are the literal values
