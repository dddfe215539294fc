"""Test cases for code-execution graders."""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

__all__ = ["CallCheck", "CodeTestCase"]


class CallCheck(BaseModel):
    """A call-based check: after the program ran, ``function(*args, **kwargs)`` must return ``expected``.

    The sandbox sends back the return value as plain data and the grader compares it,
    as JSON (tuples equal lists; ``1`` equals ``1.0``), with ``expected``, which never
    enters the sandbox. A method of a ``Solution`` class (LeetCode style) is found too.

    Attributes:
        function: The function's name (alias ``fn_name``).
        args: Positional arguments, as JSON values.
        kwargs: Keyword arguments, as JSON values.
        expected: The JSON value the call must return (``null`` included).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    function: str = Field(validation_alias=AliasChoices("function", "fn_name"))
    args: list[JsonValue] = Field(default_factory=list)
    kwargs: dict[str, JsonValue] = Field(default_factory=dict)
    expected: JsonValue

    @field_validator("function")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not value.isidentifier():
            raise ValueError(f"function must be a Python identifier, got {value!r}")
        return value


class CodeTestCase(BaseModel):
    """One test of a program.

    A test passes when the program finishes within the limits and every given check
    holds:

    * ``expected_stdout``: its standard output matches (compared by the grader);
    * ``call``: the function returns the expected value (compared by the grader);
    * ``test``: a Python snippet run after the program in the same ``__main__``
      namespace raises nothing. Snippets made only of simple asserts on calls with
      literal arguments (``assert add(2, 3) == 5``, ``assert f(x) is None``,
      ``assert math.isclose(f(1), 0.5)``, HumanEval's ``def check(candidate): ...`` with
      ``check(name)``) are turned into call checks and decided by the grader; any other
      snippet runs in a verifier process that never ran the solution, where the
      solution's functions are proxies exchanging plain data (see ``docs/graders.md``).

    At least one check is required. Dictionaries from datasets are accepted with the
    keys ``stdin``/``input`` and ``expected_stdout``/``output``/``expected_output``.

    Attributes:
        stdin: Text fed to standard input.
        expected_stdout: Expected standard output, or None to not check output.
        test: Python code that must run without raising, or None.
        call: A call-based check, or None.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    stdin: str = Field(default="", validation_alias=AliasChoices("stdin", "input"))
    expected_stdout: str | None = Field(
        default=None, validation_alias=AliasChoices("expected_stdout", "output", "expected_output")
    )
    test: str | None = None
    call: CallCheck | None = None

    @model_validator(mode="after")
    def _has_check(self) -> CodeTestCase:
        if self.expected_stdout is None and self.test is None and self.call is None:
            raise ValueError("a test case needs expected_stdout (alias output), test or call")
        return self

    @classmethod
    def from_io_lists(
        cls, inputs: Sequence[str], outputs: Sequence[str], *, fn_name: str | None = None
    ) -> list[CodeTestCase]:
        """Tests from parallel lists (the APPS / TACO / VERL ``input_output`` layout).

        Without ``fn_name`` each pair is stdin and expected stdout. With ``fn_name`` each
        input holds the call's arguments as JSON values, one per line, and each output
        the expected return value as JSON (LiveCodeBench's functional tests).

        Raises:
            ValueError: The lists differ in length, or a functional input or output is not JSON.
        """
        if len(inputs) != len(outputs):
            raise ValueError(f"got {len(inputs)} inputs but {len(outputs)} outputs")
        if fn_name is None:
            return [cls(stdin=i, expected_stdout=o) for i, o in zip(inputs, outputs, strict=True)]
        cases = []
        for index, (given, want) in enumerate(zip(inputs, outputs, strict=True)):
            try:
                args = [json.loads(line) for line in given.splitlines() if line.strip()]
                expected = json.loads(want)
            except ValueError as exc:
                raise ValueError(f"test {index}: functional inputs and outputs must be JSON: {exc}") from exc
            cases.append(cls(call=CallCheck(function=fn_name, args=args, expected=expected)))
        return cases
