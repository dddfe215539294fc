"""Test cases for code-execution graders."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

__all__ = ["CodeTestCase"]


class CodeTestCase(BaseModel):
    """One test of a program.

    A test passes when the program finishes within the limits and every given check
    holds: its standard output matches ``expected_stdout`` and/or the ``test`` snippet
    (run after the program, in the same ``__main__`` namespace, e.g.
    ``assert add(2, 3) == 5``) raises nothing. At least one check is required.

    Dictionaries from datasets are accepted with the keys ``stdin``/``input`` and
    ``expected_stdout``/``output``/``expected_output``.

    Attributes:
        stdin: Text fed to standard input.
        expected_stdout: Expected standard output, or None to not check output.
        test: Python code that must run without raising, or None.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    stdin: str = Field(default="", validation_alias=AliasChoices("stdin", "input"))
    expected_stdout: str | None = Field(
        default=None, validation_alias=AliasChoices("expected_stdout", "output", "expected_output")
    )
    test: str | None = None

    @model_validator(mode="after")
    def _has_check(self) -> CodeTestCase:
        if self.expected_stdout is None and self.test is None:
            raise ValueError("a test case needs expected_stdout (alias output) or test")
        return self

    @classmethod
    def from_io_lists(cls, inputs: Sequence[str], outputs: Sequence[str]) -> list[CodeTestCase]:
        """Build stdin/stdout tests from parallel lists (the APPS / TACO ``input_output`` layout)."""
        if len(inputs) != len(outputs):
            raise ValueError(f"got {len(inputs)} inputs but {len(outputs)} outputs")
        return [cls(stdin=i, expected_stdout=o) for i, o in zip(inputs, outputs, strict=True)]
