"""Input checks shared by the comparison graders.

A response with a lone surrogate (text with no UTF-8 form, which no judge can be sent) is
the response's fault, but in a comparison no single score can carry the blame: the
character is replaced by U+FFFD and the judge compares what it can see, so the damaged
response is judged as damaged rather than skipped (see "Who is to blame" in docs/graders.md).
"""

from __future__ import annotations

import re

from openjudge.results import InvalidInputError

_SURROGATE = re.compile("[\ud800-\udfff]")

__all__ = ["check_responses", "check_text", "sendable_response"]


def sendable_response(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (other text unchanged)."""
    if text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text)


def check_text(field: str, value: object) -> str:
    """``value`` if it is a string, else :class:`InvalidInputError` naming the field."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{field}: expected a string, got {type(value).__name__}")
    return value


def check_responses(responses: object, *, minimum: int = 2) -> list[str]:
    """The candidate responses as a list of strings (at least ``minimum`` of them)."""
    if isinstance(responses, str | bytes) or not isinstance(responses, list | tuple):
        raise InvalidInputError(f"responses: expected a list of strings, got {type(responses).__name__}")
    for i, item in enumerate(responses):
        check_text(f"responses[{i}]", item)
    if len(responses) < minimum:
        raise InvalidInputError(
            f"responses: need at least {minimum} responses to compare, got {len(responses)}"
        )
    return [sendable_response(str(r)) for r in responses]
