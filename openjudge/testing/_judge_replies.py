"""The bodies the test judge server answers with: completions an obedient judge writes, and errors.

A completion's content is a JSON instance of the request's schema, its score kept to what
the schema allows as a grammar engine keeps it (or ``{"reason": "ok", "score": N}`` without
a schema; just ``N`` for a one-token reply), malformed as a ``reply=`` directive asks, with
logprobs around the score value when asked for. The rules are documented in
:mod:`openjudge.testing.judge_server`.
"""

from __future__ import annotations

import json
import math
import re
import time
from typing import Final

from openjudge.testing._judge_directives import ChatPlan
from openjudge.testing._schema_checks import schema_of
from openjudge.testing._schema_instance import JsonValue, schema_instance

__all__ = ["Replies", "dumps", "error_body"]

_SCORE_VALUE_RE: Final = re.compile(r'(?i)(?<!\w)"?score"?\s*:\s*(-?\d+(?:\.\d+)?|"[^"\n]*")')
_TOP_PROB: Final = (0.6, 0.15, 0.04, 0.01, 0.005)  # by distance from the chosen score
_ERRORS: Final = {
    400: ("invalid_request_error", None),
    404: ("invalid_request_error", "not_found"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    503: ("server_error", "service_unavailable"),
}
_COMPACT: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_SPACED: Final = json.JSONEncoder(ensure_ascii=False)
_CACHE_SIZE: Final = 1024

_ContentKey = tuple[str, float, str | None, bool, int | None]


def dumps(value: object) -> bytes:
    """Compact JSON bytes (what the server sends)."""
    return _COMPACT.encode(value).encode()


def error_body(status: int, message: str) -> bytes:
    """An OpenAI-shaped error body."""
    kind, code = _ERRORS.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
    return dumps({"error": {"message": message, "type": kind, "param": None, "code": code}})


class Replies:
    """Builds ``chat.completion`` bodies, numbering them; caches content, as graders repeat their schema."""

    def __init__(self) -> None:
        self.completions = 0
        self._content_cache: dict[_ContentKey, tuple[str, tuple[int, int] | None]] = {}

    def completion(
        self, request: dict[str, object], chars: int, plan: ChatPlan, *, model: str
    ) -> dict[str, object]:
        """The completion for ``request`` (``chars``: characters of its message texts, for usage)."""
        content, score_span = self._content(request, plan)
        choice: dict[str, object] = {
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
            "logprobs": None,
        }
        if request.get("logprobs") is True:
            top = request.get("top_logprobs")
            k = top if isinstance(top, int) and not isinstance(top, bool) and top > 0 else 0
            choice["logprobs"] = {"content": _logprobs(content, score_span, plan.score, k)}
        completion_tokens = max(1, len(content) // 4)
        prompt_tokens = max(1, chars // 4)
        self.completions += 1
        return {
            "id": f"chatcmpl-oj{self.completions}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model") if isinstance(request.get("model"), str) else model,
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _content(self, request: dict[str, object], plan: ChatPlan) -> tuple[str, tuple[int, int] | None]:
        """The reply text and the span of its score value."""
        schema = schema_of(request)
        one_token = 1 in (request.get("max_tokens"), request.get("max_completion_tokens"))
        key = (_COMPACT.encode(schema), plan.score, plan.reply, one_token, plan.steps)
        cached = self._content_cache.get(key)
        if cached is None:
            if len(self._content_cache) >= _CACHE_SIZE:
                self._content_cache.clear()
            cached = self._content_cache[key] = _render(schema, plan, one_token)
        return cached


def _dumps_text(value: object) -> str:
    return _SPACED.encode(value)


def _number_steps(value: JsonValue, steps: int) -> JsonValue:
    """Lists of objects with a ``step_index`` get one item per step of the prompt, numbered
    ``0..steps-1``, as an obedient judge numbers the ``<step index="k">`` blocks it was shown."""
    if isinstance(value, dict):
        return {k: _number_steps(v, steps) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(item, dict) and "step_index" in item for item in value):
            template = value[0]
            assert isinstance(template, dict)
            return [{**template, "step_index": k} for k in range(steps)]
        return [_number_steps(v, steps) for v in value]
    return value


def _render(
    schema: dict[str, object] | None, plan: ChatPlan, one_token: bool
) -> tuple[str, tuple[int, int] | None]:
    score = plan.score
    if schema is None:
        if plan.reply is None and one_token:
            text = _dumps_text(score)
            return text, (0, len(text))
        value: JsonValue = {"reason": "ok", "score": score}
    else:
        value = schema_instance(schema, score=score, clamp=True)
        if plan.steps is not None:
            value = _number_steps(value, plan.steps)
    reply = plan.reply
    if reply == "prose":
        text = f"The answer looks fine. Score: {_dumps_text(score)}"
    elif reply == "fenced":
        text = f"```json\n{_dumps_text(value)}\n```"
    elif reply in ("missing_score", "out_of_range", "nonnumeric") and isinstance(value, dict):
        value = {k: v for k, v in value.items() if k != "score"}
        if reply != "missing_score":
            value["score"] = 42 if reply == "out_of_range" else "high"
        text = _dumps_text(value)
    else:
        text = _dumps_text(value)
        if reply == "truncated":
            text = text[: len(text) // 2]
    match = _SCORE_VALUE_RE.search(text)
    return text, match.span(1) if match else None


def _logprobs(content: str, span: tuple[int, int] | None, score: object, k: int) -> list[dict[str, object]]:
    pieces = [(content, False)] if span is None else [(content[: span[0]], False)]
    if span is not None:
        pieces += [(content[span[0] : span[1]], True), (content[span[1] :], False)]
    digit = score if isinstance(score, int) and not isinstance(score, bool) and 1 <= score <= 5 else None
    out: list[dict[str, object]] = []
    for token, is_score in pieces:
        if not token:
            continue
        logprob = math.log(_TOP_PROB[0]) if is_score and digit is not None else 0.0
        if is_score and digit is not None and k:
            digits = sorted(range(1, 6), key=lambda d: (abs(d - digit), d))[:k]
            top = [_token(str(d), math.log(_TOP_PROB[abs(d - digit)])) for d in digits]
        else:
            top = [_token(token, logprob)] if k else []
        out.append({**_token(token, logprob), "top_logprobs": top})
    return out


def _token(token: str, logprob: float) -> dict[str, object]:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode())}
