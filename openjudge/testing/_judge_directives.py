"""What a chat request asks the test judge server to do: its ``#oj:`` directives, read into a plan.

The directive language is documented in :mod:`openjudge.testing.judge_server`. A request
is read once: its JSON, its message texts (counted for ``usage``), the first user message
(the key of ``times`` budgets, and where ``<step index="k">`` blocks are counted), and the
directives in order of appearance. An invalid directive is a :class:`BadRequest`: the
server answers it with a 400 naming the problem. The caller's ``check`` sees the request
before any ``times`` budget is spent, so a request it refuses uses none.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["BadRequest", "ChatPlan", "FaultBudgets", "read_chat"]

_DIRECTIVE_RE: Final = re.compile(r"#oj:([a-z_]+(?:=[\w.+-]*)?(?:,[a-z_]+(?:=[\w.+-]*)?)*)")
_STEP_RE: Final = re.compile(r'<step index="\d+">')
_KEYS: Final = frozenset({"status", "retry_after_s", "times", "reset", "hang", "latency_s", "score", "reply"})
_FAULTS: Final = frozenset({"status", "reset", "hang", "reply"})
_REPLIES: Final = frozenset({"prose", "fenced", "missing_score", "out_of_range", "truncated", "nonnumeric"})

FaultBudgets = dict[bytes, int]
"""Uses of each ``times``-limited fault so far, by (directive, first user message) digest."""


class BadRequest(Exception):
    """The request cannot be served as written (a 400 with this message)."""


@dataclass(slots=True)
class ChatPlan:
    """How to answer one chat request."""

    score: int | float
    latency_s: float | None = None
    status: int = 200
    retry_after_s: str | None = None
    action: str = "reply"  # reply | reset | hang
    reply: str | None = None
    steps: int | None = None  # ``<step index="k">`` blocks in the prompt (trajectory judges)

    def is_reply(self) -> bool:
        return self.action == "reply" and self.status == 200


def read_chat(
    body: bytes,
    *,
    default_score: int | float,
    budgets: FaultBudgets,
    check: Callable[[Mapping[str, object]], None] | None = None,
) -> tuple[dict[str, object], int, ChatPlan]:
    """The request, the characters of its message texts, and the plan its directives make.

    A ``times``-limited fault that fires consumes one use from ``budgets``; ``check`` is
    called with the request first, so what it raises leaves the budgets untouched.

    Raises:
        BadRequest: Not JSON, no messages, streaming asked for, or an invalid directive.
    """
    try:
        request = json.loads(body)
    except ValueError as exc:
        raise BadRequest(f"the body is not valid JSON: {exc}") from None
    messages = request.get("messages") if isinstance(request, dict) else None
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty list")
    if request.get("stream"):
        raise BadRequest("streaming is not supported by the test judge server")
    chars = 0
    first_user: str | None = None
    steps: int | None = None
    directives: list[str] = []
    for message in messages:
        if not isinstance(message, dict):
            raise BadRequest("each message must be an object")
        text = _text(message.get("content"))
        chars += len(text)
        if first_user is None and message.get("role") == "user":
            first_user = text
            steps = len(_STEP_RE.findall(text)) or None
        if "#oj:" in text:
            directives.extend(d for d in _DIRECTIVE_RE.findall(text) if d not in directives)
    if check is not None:
        check(request)
    plan = _plan(directives, first_user or "", default_score, budgets)
    plan.steps = steps
    return request, chars, plan


def number(key: str, value: str) -> float:
    """A directive's numeric value; only ``score`` may be negative."""
    try:
        parsed = float(value)
    except ValueError:
        raise BadRequest(f"directive {key}={value!r} is not a number") from None
    if not math.isfinite(parsed) or (key != "score" and parsed < 0):
        raise BadRequest(f"directive {key}={value!r} must be finite and non-negative")
    return parsed


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _plan(
    directives: list[str], first_user: str, default_score: int | float, budgets: FaultBudgets
) -> ChatPlan:
    plan = ChatPlan(score=default_score)
    faults: list[tuple[str, dict[str, str]]] = []
    for directive in directives:
        items: dict[str, str] = {}
        for item in directive.split(","):
            key, _, value = item.partition("=")
            if key not in _KEYS:
                raise BadRequest(f"unknown directive key {key!r} in #oj:{directive}")
            items[key] = value
        if "score" in items:
            score = number("score", items["score"])
            plan.score = int(score) if score.is_integer() and "." not in items["score"] else score
        if "latency_s" in items:
            plan.latency_s = number("latency_s", items["latency_s"])
        if len(_FAULTS & items.keys()) > 1:
            raise BadRequest(f"at most one of status/reset/hang/reply per directive: #oj:{directive}")
        if _FAULTS & items.keys():
            faults.append((directive, items))
    for directive, items in faults:
        if "times" in items:
            if not items["times"].isdigit():
                raise BadRequest(f"times must be a non-negative integer in #oj:{directive}")
            use_key = hashlib.blake2b(f"{directive}\0{first_user}".encode(), digest_size=16).digest()
            used = budgets.get(use_key, 0)
            if used >= int(items["times"]):
                continue
            budgets[use_key] = used + 1
        _apply_fault(plan, directive, items)
        break
    return plan


def _apply_fault(plan: ChatPlan, directive: str, items: dict[str, str]) -> None:
    if "status" in items:
        status = items["status"]
        if not status.isdigit() or not 400 <= int(status) <= 599:
            raise BadRequest(f"status must be an HTTP error code 400..599 in #oj:{directive}")
        plan.status = int(status)
        if items.get("retry_after_s"):
            plan.retry_after_s = items["retry_after_s"]
            number("retry_after_s", plan.retry_after_s)
    elif "reply" in items:
        if items["reply"] not in _REPLIES:
            raise BadRequest(f"reply must be one of {sorted(_REPLIES)} in #oj:{directive}")
        plan.reply = items["reply"]
    else:
        plan.action = "reset" if "reset" in items else "hang"
