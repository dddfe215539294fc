"""Is the response valid JSON?"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from pydantic import JsonValue

from openjudge.graders._inputs import require_str
from openjudge.graders.base_grader import BaseGrader, grader_boundary
from openjudge.graders.format._json_text import json_type_name, parse_json
from openjudge.results import GraderScore, ScoreRange

__all__ = ["JsonValidatorGrader"]

_JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})


class JsonValidatorGrader(BaseGrader):
    """1.0 if the response parses as JSON (of an allowed top-level type), else 0.0.

    Parsing is strict RFC 8259 (``NaN``/``Infinity`` are rejected); whitespace around the
    document is allowed. With ``strip_code_fence`` a response that is exactly one
    Markdown fenced block (```` ```json ... ``` ````) is unwrapped first.

    Inputs:
        response: The text being graded.

    Score: 0.0 or 1.0 in [0, 1]; higher is better.

    Args:
        strip_code_fence: Unwrap a response that is one fenced code block.
        allowed_types: If given, the top-level value must have one of these JSON types
            (``object``, ``array``, ``string``, ``number``, ``integer``, ``boolean``,
            ``null``; ``number`` includes integers).
        name: Result name (default ``"json_validator"``).
        description: One line on what is measured.
    """

    default_name: ClassVar[str] = "json_validator"
    default_score_range: ClassVar[ScoreRange | None] = ScoreRange(low=0.0, high=1.0)

    def __init__(
        self,
        *,
        strip_code_fence: bool = True,
        allowed_types: Iterable[str] | None = None,
        name: str = "",
        description: str = "",
    ) -> None:
        types = None if allowed_types is None else frozenset(allowed_types)
        if types is not None and (not types or not types <= _JSON_TYPES):
            raise ValueError(
                f"allowed_types must be a non-empty subset of {sorted(_JSON_TYPES)}, got {sorted(types)}"
            )
        super().__init__(name=name, description=description)
        self.strip_code_fence = strip_code_fence
        self.allowed_types = types

    @grader_boundary
    async def aevaluate(self, *, response: str) -> GraderScore:
        """Check that ``response`` is valid JSON."""
        response = require_str("response", response)
        parsed = parse_json(response, strip_fence=self.strip_code_fence)
        metadata: dict[str, JsonValue] = {"valid": parsed.ok, "fence_stripped": parsed.fence_stripped}
        reason = "response is valid JSON"
        valid = parsed.ok
        if not parsed.ok:
            reason = f"response is not valid JSON: {parsed.error}"
            metadata["error"] = parsed.error
        else:
            kind = json_type_name(parsed.value)
            metadata["type"] = kind
            allowed = self.allowed_types
            if (
                allowed is not None
                and kind not in allowed
                and not (kind == "integer" and "number" in allowed)
            ):
                valid = False
                metadata["valid"] = False
                reason = f"top-level JSON value is {kind}, expected one of {sorted(allowed)}"
        return GraderScore(
            name=self.name,
            score=1.0 if valid else 0.0,
            reason=reason,
            metadata=metadata,
            score_range=self.score_range,
        )
