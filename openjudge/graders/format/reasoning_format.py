"""Check the ``<think>...</think><answer>...</answer>`` response format."""

from __future__ import annotations

from typing import ClassVar

from pydantic import JsonValue

from openjudge.graders._inputs import require_str
from openjudge.graders.base_grader import BaseGrader, grader_boundary
from openjudge.results import GraderScore, ScoreRange

__all__ = ["ReasoningFormatGrader"]


def _check_tag(field: str, tag: str) -> None:
    if not tag or any(ch in tag for ch in "<>/ \t\n"):
        raise ValueError(f"{field} must be a bare tag name such as 'think', got {tag!r}")


class ReasoningFormatGrader(BaseGrader):
    """1.0 if the response is a reasoning block followed by an answer block, else 0.0.

    With ``strict`` (the default) the whole response, apart from surrounding whitespace,
    must be ``<think>…</think>`` then optional whitespace then ``<answer>…</answer>``,
    and each of the four tags must occur exactly once. Without ``strict`` the first
    ``<think>…</think>`` block must come before the first ``<answer>…</answer>`` block,
    and other text may surround them. With ``require_content`` both blocks must hold
    non-whitespace text.

    Inputs:
        response: The text being graded.

    Score: 0.0 or 1.0 in [0, 1]; higher is better. ``metadata["problem"]`` says what is
    wrong when the score is 0.

    Args:
        think_tag: Name of the reasoning tag (default ``think``).
        answer_tag: Name of the answer tag (default ``answer``).
        strict: Require exactly the two blocks and nothing else.
        require_content: Require both blocks to be non-empty.
        name: Result name (default ``"reasoning_format"``).
        description: One line on what is measured.
    """

    default_name: ClassVar[str] = "reasoning_format"
    default_score_range: ClassVar[ScoreRange | None] = ScoreRange(low=0.0, high=1.0)

    def __init__(
        self,
        *,
        think_tag: str = "think",
        answer_tag: str = "answer",
        strict: bool = True,
        require_content: bool = True,
        name: str = "",
        description: str = "",
    ) -> None:
        _check_tag("think_tag", think_tag)
        _check_tag("answer_tag", answer_tag)
        if think_tag == answer_tag:
            raise ValueError("think_tag and answer_tag must differ")
        super().__init__(name=name, description=description)
        self.think_tag = think_tag
        self.answer_tag = answer_tag
        self.strict = strict
        self.require_content = require_content

    def problem(self, response: str) -> str | None:
        """What is wrong with the format of ``response``, or None if it is well formed."""
        t_open, t_close = f"<{self.think_tag}>", f"</{self.think_tag}>"
        a_open, a_close = f"<{self.answer_tag}>", f"</{self.answer_tag}>"
        if self.strict:
            for tag in (t_open, t_close, a_open, a_close):
                count = response.count(tag)
                if count == 0:
                    return f"{tag} is missing"
                if count > 1:
                    return f"{tag} occurs {count} times, expected exactly once"
        positions: dict[str, int] = {}
        cursor = 0
        for tag in (t_open, t_close, a_open, a_close):
            found = response.find(tag, cursor)
            if found == -1:
                missing = response.find(tag) == -1
                return f"{tag} is missing" if missing else f"{tag} is out of order"
            positions[tag] = found
            cursor = found + len(tag)
        if response.find(a_open) < positions[t_close]:
            return f"{a_open} appears before the {self.think_tag} block ends"
        think = response[positions[t_open] + len(t_open) : positions[t_close]]
        answer = response[positions[a_open] + len(a_open) : positions[a_close]]
        if self.strict:
            if response[: positions[t_open]].strip() or response[cursor:].strip():
                return "text outside the reasoning and answer blocks"
            if response[positions[t_close] + len(t_close) : positions[a_open]].strip():
                return "text between the reasoning and answer blocks"
        if self.require_content and not think.strip():
            return f"the {self.think_tag} block is empty"
        if self.require_content and not answer.strip():
            return f"the {self.answer_tag} block is empty"
        return None

    @grader_boundary
    async def aevaluate(self, *, response: str) -> GraderScore:
        """Check the format of ``response``."""
        response = require_str("response", response)
        problem = self.problem(response)
        metadata: dict[str, JsonValue] = {"strict": self.strict, "well_formed": problem is None}
        if problem is not None:
            metadata["problem"] = problem
        return GraderScore(
            name=self.name,
            score=1.0 if problem is None else 0.0,
            reason="response has the reasoning and answer blocks in order"
            if problem is None
            else f"format problem: {problem}",
            metadata=metadata,
            score_range=self.score_range,
        )
