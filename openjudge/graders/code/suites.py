"""Test cases from public code suites: HumanEval and MBPP records as :class:`CodeTestCase`.

Both suites test with assert-style code, which
:class:`~openjudge.graders.code.CodeExecutionGrader` runs in its verifier process (never in
the solution's). HumanEval's tests also call helpers that the *prompt* defines (``poly``
in HumanEval/32, ``encode_cyclic`` in /38): the response (prompt + completion) could
redefine them, so :func:`humaneval_case` copies them from the prompt into the test, where
the trusted definitions win.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence

from openjudge.graders.code._cases import CodeTestCase

__all__ = ["humaneval_case", "mbpp_case", "prompt_helpers"]


def prompt_helpers(prompt: str, entry_point: str) -> str:
    """The prompt's imports, constants and functions other than ``entry_point``, as source.

    Raises:
        ValueError: The prompt is not Python (it must parse, docstring-only body included).
    """
    try:
        tree = ast.parse(prompt)
    except SyntaxError as exc:
        raise ValueError(f"the prompt does not parse as Python: {exc}") from exc
    kept: list[str] = []
    for node in tree.body:
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and node.name == entry_point
        ):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom | ast.Assign | ast.FunctionDef | ast.ClassDef):
            segment = ast.get_source_segment(prompt, node, padded=True)
            if segment is not None:
                kept.append(segment)
    return "\n\n".join(kept)


def humaneval_case(problem: Mapping[str, str]) -> CodeTestCase:
    """The test of a HumanEval record (``prompt``, ``test``, ``entry_point``).

    The response to grade is the prompt followed by the completion, as HumanEval's own
    harness builds it.
    """
    entry = problem["entry_point"]
    helpers = prompt_helpers(problem["prompt"], entry)
    return CodeTestCase(test=f"{helpers}\n\n{problem['test']}\n\ncheck({entry})\n")


def mbpp_case(test_list: Sequence[str], test_setup_code: str = "") -> CodeTestCase:
    """The test of an MBPP record: its setup code, then its asserts, in one snippet."""
    return CodeTestCase(test="\n".join([test_setup_code, *test_list]).strip() + "\n")
