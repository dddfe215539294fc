"""Input checks shared by the comparison graders."""

from __future__ import annotations

from openjudge.results import InvalidInputError

__all__ = ["check_responses", "check_text"]


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
    return [str(r) for r in responses]
