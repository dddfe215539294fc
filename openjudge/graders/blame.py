"""Who pays when grading fails: helpers that turn what a hostile response can do into blame.

The rule (docs/graders.md, "Who is to blame"): a failure the *response* caused is the
response's, a :class:`~openjudge.results.ResponseFailure` that the grader boundary scores at
the bottom of the range; a failure of the system (a judge or sandbox down, our own timeout,
a bug, a bad dataset field) is a :class:`~openjudge.results.GraderError`.

What a response can throw at a grader, and what these helpers make of it:

* nesting deep enough to exhaust the interpreter's recursion (``[[[[...]]]]``): bounded up
  front by :func:`check_depth` (cause ``too_deep``), never a ``RecursionError``;
* numbers too large to print or compare (``OverflowError``, ``int`` digit limits): cause
  ``overflow``;
* text that has no UTF-8 form (a lone surrogate): cause ``lone_surrogate``;
* length past the judge's context window: a prompt the model refused as too long
  (:class:`~openjudge.errors.ContextOverflow` on the call's error) is the response's when
  the prompt without the response, plus a short response, would have fit
  (:func:`overflow_failure`, cause ``response_too_long``); otherwise the template or the
  dataset fields are too long for the judge, an error;
* a value of the wrong type where the response wrote it (a tool call whose ``name`` is ``7``,
  ``tool_calls`` that is not a list inside an assistant message): cause ``malformed_tool_call``
  or ``malformed_message`` through :func:`shape_fault`, which makes the same fault in a
  dataset field an ``invalid_input`` error.

:func:`response_blame` is the safety net around work on the response's values alone: it
turns ``RecursionError``, ``OverflowError`` and ``UnicodeError`` raised there into the
response's failure. Never wrap work that also reads the reference or dataset fields: their
faults are the system's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from pydantic import JsonValue

from openjudge.errors import ContextOverflow
from openjudge.models.chat_model import message_chars
from openjudge.results import GraderError, InvalidInputError, ResponseFailure, ScoreRange

__all__ = [
    "MAX_RESPONSE_DEPTH",
    "SHORT_RESPONSE_TOKENS",
    "check_depth",
    "check_response_text",
    "context_overflow_of",
    "message_chars",
    "nesting_depth",
    "overflow_failure",
    "overflow_metadata",
    "response_blame",
    "set_response_failure_score",
    "shape_fault",
    "shown",
]

MAX_RESPONSE_DEPTH = 100
"""Deepest JSON nesting a response may use (real answers and tool arguments stay far below;
deeper values exhaust recursion in comparison, canonical forms and result validation)."""


_SURROGATE = re.compile("[\ud800-\udfff]")

SHORT_RESPONSE_TOKENS = 256
"""Room a short benign response takes in a judge's prompt: if the prompt without the response
has this much room left in the context window, the response is what made the prompt too long."""


def shown(text: str, limit: int = 500) -> str:
    """Response text as result metadata may carry it: cut to ``limit`` characters, lone
    surrogates (which no JSON writer accepts) replaced by U+FFFD."""
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def set_response_failure_score(grader: object, score: float) -> None:
    """Give ``grader``'s response failures ``score`` instead of the bottom of its range.

    Raises:
        ValueError: ``score`` is not finite or lies outside the grader's declared range.
    """
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise ValueError(f"response_failure_score must be a finite number, got {score!r}")
    score_range = getattr(grader, "score_range", None)
    if isinstance(score_range, ScoreRange) and not score_range.contains(float(score)):
        raise ValueError(
            f"response_failure_score {score:g} is outside the grader's range "
            f"[{score_range.low:g}, {score_range.high:g}]"
        )
    grader.response_failure_score = float(score)  # type: ignore[attr-defined]  # any grader object


def nesting_depth(value: object, limit: int) -> int:
    """How deeply ``value``'s lists, tuples and mappings nest (a scalar is 0), counted up to ``limit + 1``.

    Iterative, so it is safe on values far deeper than the recursion limit.
    """
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: list[object] = list(item.values())
        elif isinstance(item, list | tuple):
            children = list(item)
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest
        stack.extend((child, depth) for child in children)
    return deepest


def check_depth(value: object, *, what: str, response: bool, limit: int = MAX_RESPONSE_DEPTH) -> None:
    """Raise if ``value`` nests deeper than ``limit``.

    Args:
        value: A parsed JSON value (or any nest of lists and mappings).
        what: What the value is, for the message (``"the response's JSON"``).
        response: The response wrote it (``ResponseFailure``, cause ``too_deep``); else it
            is a dataset field (``InvalidInputError``).
        limit: The deepest nesting allowed.
    """
    if nesting_depth(value, limit) > limit:
        message = f"{what} nests deeper than {limit} levels"
        if response:
            raise ResponseFailure("too_deep", message)
        raise InvalidInputError(message)


def shape_fault(message: str, *, response: bool, cause: str = "malformed_tool_call") -> Exception:
    """The exception for a value of the wrong type or shape, by who wrote it.

    Args:
        message: What is wrong, naming the field.
        response: The response wrote the value (an assistant turn, a predicted tool call):
            its failure, ``cause``; else a dataset field's (``InvalidInputError``).
        cause: The response failure's cause.
    """
    if response:
        return ResponseFailure(cause, message)
    return InvalidInputError(message)


def check_response_text(field: str, text: str) -> None:
    """Raise ``ResponseFailure`` (cause ``lone_surrogate``) if the response's ``text`` has no UTF-8 form."""
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ResponseFailure(
            "lone_surrogate",
            f"{field} contains a lone surrogate U+{ord(text[exc.start]):04X} at character {exc.start} "
            "(text with no UTF-8 form)",
        ) from None


@contextmanager
def response_blame(what: str) -> Iterator[None]:
    """Blame the response for recursion, overflow and encoding failures raised in the block.

    Args:
        what: What the block works on, for the message (``"comparing the response's JSON"``).
    """
    try:
        yield
    except RecursionError:
        raise ResponseFailure("too_deep", f"{what}: the response nests too deeply") from None
    except OverflowError as exc:
        raise ResponseFailure("overflow", f"{what}: a number in the response is too large ({exc})") from None
    except UnicodeError as exc:
        raise ResponseFailure(
            "bad_unicode", f"{what}: the response's text cannot be encoded ({exc})"
        ) from None


def overflow_metadata(overflow: ContextOverflow) -> dict[str, JsonValue]:
    """What an error's metadata keeps of a context overflow (read back by :func:`context_overflow_of`)."""
    return {
        "context_overflow": {
            "limit_tokens": overflow.limit_tokens,
            "prompt_tokens": overflow.prompt_tokens,
            "completion_tokens": overflow.completion_tokens,
        }
    }


def context_overflow_of(result: object) -> ContextOverflow | None:
    """The context overflow a judge call's :class:`GraderError` records, or ``None``."""
    if not isinstance(result, GraderError):
        return None
    raw = result.metadata.get("context_overflow")
    if not isinstance(raw, dict):
        return None
    counts = {
        key: value
        for key in ("limit_tokens", "prompt_tokens", "completion_tokens")
        if isinstance(value := raw.get(key), int) and not isinstance(value, bool)
    }
    return ContextOverflow(**counts)


def overflow_failure(
    overflow: ContextOverflow, *, prompt_chars: int, rest_chars: int, what: str = "the response"
) -> ResponseFailure | None:
    """The response's failure if it is what made a judge's prompt too long, else ``None``.

    It is when the prompt without it (``rest_chars`` of the prompt's ``prompt_chars``), plus
    room for a short response (:data:`SHORT_RESPONSE_TOKENS`) and the reply, fits the context
    window. Tokens are estimated from the prompt's own tokens per character when the model said
    how many it counted; when it did not, the response must be at least half the prompt.

    Args:
        overflow: What the model said of the prompt it refused.
        prompt_chars: Characters of text in the refused prompt.
        rest_chars: Characters of text in the same prompt with the response left empty.
        what: What the response is, for the message (``"response B"``).
    """
    response_chars = prompt_chars - rest_chars
    if response_chars <= 0:
        return None
    limit, prompt_tokens = overflow.limit_tokens, overflow.prompt_tokens
    if limit and prompt_tokens and prompt_chars > 0:
        rest_tokens = rest_chars * prompt_tokens / prompt_chars
        fits = rest_tokens + SHORT_RESPONSE_TOKENS + (overflow.completion_tokens or 0) <= limit
    else:
        fits = response_chars >= rest_chars
    if not fits:
        return None
    return ResponseFailure(
        "response_too_long",
        f"{what} is too long for the judge ({response_chars} characters; {overflow.describe()}); "
        "without it the prompt fits",
    )
