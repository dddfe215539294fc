"""Run-time checks of grader inputs, shared by the built-in graders (data arrives untyped from datasets and mappers).

Each check raises :class:`~openjudge.graders.base_grader.InvalidInputError` naming the
field, which ``grader_boundary`` turns into ``GraderError(kind="invalid_input")``.
"""

from __future__ import annotations

from openjudge.results import InvalidInputError

__all__ = ["require_str"]


def require_str(field: str, value: object) -> str:
    """Return ``value`` if it is a ``str``; otherwise raise ``InvalidInputError`` naming ``field``."""
    if not isinstance(value, str):
        raise InvalidInputError(f"input {field!r} must be a str, got {type(value).__name__}")
    return value
