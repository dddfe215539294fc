"""A local OpenAI-compatible judge server with deterministic fault injection.

For tests and benchmarks only: it listens on loopback, has no authentication and
answers like an obedient LLM judge. Standard library only (an ``asyncio.Protocol``
HTTP/1.1 server with keep-alive and ``Content-Length`` bodies).

Why hand-written rather than ``aiohttp.web``: the benchmarks run this server in a child
process on the same cores as the client whose CPU they measure, so its own cost per
request is taken from the measurement. ``python -m bench.judge_server`` measured it at
0.60-0.66x the CPU per request of a minimal ``aiohttp.web`` server that answers a fixed
verdict (180 vs 300 us at C=256 on 2 cores), while this one also parses directives and
builds schema instances. Its faults need the raw transport too (``reset`` aborts with a
TCP RST; ``hang`` never answers).

Endpoints:

- ``POST /v1/chat/completions``: a ``chat.completion``. The content is a JSON
  instance of the schema in ``response_format`` (``{"type": "json_schema",
  "json_schema": {"schema": S}}`` or ``{"type": "json_object", "schema": S}``;
  vLLM's top-level ``structured_outputs: {"json": S}``/``guided_json: S`` too),
  built by :func:`openjudge.testing._schema_instance.schema_instance`. The server
  enforces the schema as a grammar engine does: the score is the allowed value nearest
  the one asked for (an ``enum``'s nearest value, or clamped into ``minimum``/``maximum``),
  and a schema no engine could enforce (an empty ``enum``, ``minimum`` above ``maximum``;
  in ``json_schema`` with ``"strict": true`` also OpenAI's rules: every object has
  ``additionalProperties: false`` and requires every property) gets a 400 naming the
  problem (:mod:`openjudge.testing._schema_checks`). A mode listed in ``refuse`` (e.g.
  ``{"json_schema": 500}``, as llama-cpp-python's server answers) gets that status
  instead, with a message naming the response format. Without a
  schema it is ``{"reason": "ok", "score": N}``; without a schema and with
  ``max_tokens``/``max_completion_tokens`` of 1 it is just ``N`` (for logprob
  scoring). A list of objects with a ``step_index`` gets one item per
  ``<step index="k">`` block of the first user message, numbered ``0..n-1`` (a
  trajectory judge's per-step evaluations). ``usage``: prompt tokens = characters of all message texts // 4,
  completion tokens = characters of the content // 4, each at least 1; one choice.
- ``GET /v1/models``, ``GET /stats``, ``POST /stats/reset``
  (body ``{"faults": true}`` also forgets the ``times`` counters) and
  ``POST /config`` with ``{"latency_s": float, "jitter_s": float}``.

Logprobs: with ``logprobs: true`` the content is split into at most three tokens:
the text before the score value, the score value, the text after it. With
``top_logprobs`` = k > 0 and an integer score s in 1..5, the score token's
alternatives are the k digits of 1..5 nearest to s (ties: smaller digit first)
with probability 0.6 at distance 0, 0.15 at 1, 0.04 at 2, 0.01 at 3 and 0.005 at 4
(sum ≤ 0.98, symmetric, so the expected score is s for s = 3). Other tokens have
probability 1 and list only themselves.

Directives: the message texts (strings or lists of ``{"type": "text"}`` parts)
may contain ``#oj:`` followed by comma-separated items ``key`` or ``key=value``;
a value uses letters, digits and ``._+-``, and the directive ends at any other
character (whitespace, quote, ``<``). Example: ``#oj:status=429,retry_after=0.2,times=1``.

- ``score=<number>``: the score placed in the reply (default 3), kept to what the
  request's schema allows (see above); without a schema it is written as given.
- ``latency=<seconds>``: latency of this request whatever its outcome. Otherwise
  successful replies wait the server latency (plus uniform ``[0, jitter)``) and
  faults fire at once.
- Faults, at most one per directive: ``status=<400..599>`` (optional
  ``retry_after=<seconds>``, sent verbatim as ``Retry-After``), ``reset`` (abort the
  connection with a TCP RST, no response), ``hang`` (never answer; the request
  stays in flight until the client leaves or the server stops),
  ``reply=prose|fenced|missing_score|out_of_range|truncated|nonnumeric``
  (malformed judge output with status 200: ``The answer looks fine. Score: N``,
  the valid JSON inside a ```` ```json ```` fence, the JSON without ``score``, score
  42, the JSON text cut in half, score ``"high"``).
- ``times=K`` on a fault: only the first K requests that carry this exact
  directive text *and* the same first user message fail; later ones are served
  normally. The key deliberately ignores the rest of the conversation, so a
  judge's re-ask (original messages + bad answer + correction) and retries of the
  same request count against the same budget, while distinct samples count
  independently. Without ``times`` the fault always fires. When several fault
  directives apply, the first one (in message order) with budget left fires and
  only it consumes a use. ``times`` and ``retry_after`` on other keys are ignored.

An invalid directive gets a 400 ``invalid_request_error`` naming the problem.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import hashlib
import http
import ipaddress
import json
import logging
import math
import os
import random
import re
import selectors
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Final, Self

from openjudge.testing._schema_checks import FORMAT_KINDS, format_kind, refusal_message, schema_problem
from openjudge.testing._schema_instance import JsonValue, schema_instance

__all__ = ["DEFAULT_MODEL", "JudgeServer", "JudgeServerProcess", "JudgeServerStats", "main"]

logger = logging.getLogger(__name__)

DEFAULT_MODEL: Final = "openjudge-test-judge"
_MODULE: Final = "openjudge.testing.judge_server"
_MAX_HEAD: Final = 64 * 1024
_MAX_BODY: Final = 32 * 1024 * 1024
_DIRECTIVE_RE: Final = re.compile(r"#oj:([a-z_]+(?:=[\w.+-]*)?(?:,[a-z_]+(?:=[\w.+-]*)?)*)")
_SCORE_VALUE_RE: Final = re.compile(r'(?i)(?<!\w)"?score"?\s*:\s*(-?\d+(?:\.\d+)?|"[^"\n]*")')
_KEYS: Final = frozenset({"status", "retry_after", "times", "reset", "hang", "latency", "score", "reply"})
_REPLIES: Final = frozenset({"prose", "fenced", "missing_score", "out_of_range", "truncated", "nonnumeric"})
_PHRASES: Final = {s.value: s.phrase.encode() for s in http.HTTPStatus}
_TOP_PROB: Final = (0.6, 0.15, 0.04, 0.01, 0.005)  # by distance from the chosen score
_ERRORS: Final = {
    400: ("invalid_request_error", None),
    404: ("invalid_request_error", "not_found"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    503: ("server_error", "service_unavailable"),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeServerStats:
    """Counters since start or the last reset; peaks restart from the current level."""

    chat_requests: int
    """Chat completion requests received (every outcome, including 400s)."""
    by_outcome: Mapping[str, int]
    """Chat requests by outcome: ``"200"``, other status codes, ``"reset"``, ``"hang"``."""
    in_flight: int
    """Chat requests received and not yet answered (hung ones included)."""
    peak_in_flight: int
    open_connections: int
    max_concurrent_connections: int
    """Peak number of simultaneously open connections."""
    latency_s: float
    jitter_s: float

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> JudgeServerStats:
        """Rebuild stats from the ``GET /stats`` body."""
        outcomes = data["by_outcome"]
        if not isinstance(outcomes, Mapping):
            raise ValueError("by_outcome must be an object")
        return cls(
            chat_requests=_as_int(data["chat_requests"]),
            by_outcome={str(k): _as_int(v) for k, v in outcomes.items()},
            in_flight=_as_int(data["in_flight"]),
            peak_in_flight=_as_int(data["peak_in_flight"]),
            open_connections=_as_int(data["open_connections"]),
            max_concurrent_connections=_as_int(data["max_concurrent_connections"]),
            latency_s=_as_float(data["latency_s"]),
            jitter_s=_as_float(data["jitter_s"]),
        )


def _as_int(value: object) -> int:
    if isinstance(value, int):
        return value
    raise ValueError(f"expected an integer, got {value!r}")


def _as_float(value: object) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    raise ValueError(f"expected a finite number, got {value!r}")


class _BadRequest(Exception):
    pass


class _Refused(Exception):
    """The request's structured-output mode or schema is refused with ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(slots=True)
class _Plan:
    score: int | float
    latency: float | None = None
    status: int = 200
    retry_after: str | None = None
    action: str = "reply"  # reply | reset | hang
    reply: str | None = None
    steps: int | None = None  # ``<step index="k">`` blocks in the prompt (trajectory judges)

    def is_reply(self) -> bool:
        return self.action == "reply" and self.status == 200


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _number(key: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise _BadRequest(f"directive {key}={value!r} is not a number") from None
    if not math.isfinite(number) or (key != "score" and number < 0):
        raise _BadRequest(f"directive {key}={value!r} must be finite and non-negative")
    return number


class _State:
    """Configuration, counters and request handling shared by all connections."""

    def __init__(
        self,
        *,
        model: str,
        latency_s: float,
        jitter_s: float,
        score: int | float,
        seed: int,
        refuse: Mapping[str, int] | None = None,
    ) -> None:
        self.model = model
        self.refuse = _check_refuse(refuse or {})
        self.latency_s = latency_s
        self.jitter_s = jitter_s
        self.score = score
        self.rng = random.Random(seed)
        self.connections: set[_Connection] = set()
        self.fault_uses: dict[bytes, int] = {}
        self.completions = 0
        self.in_flight = 0
        self._content_cache: dict[
            tuple[str, float, str | None, bool, int | None], tuple[str, tuple[int, int] | None]
        ] = {}
        self._schema_problems: dict[tuple[str, bool], str | None] = {}
        self.reset()

    def reset(self, *, faults: bool = False) -> None:
        self.chat_requests = 0
        self.by_outcome: dict[str, int] = {"200": 0, "reset": 0, "hang": 0}
        self.peak_in_flight = self.in_flight
        self.max_connections = len(self.connections)
        if faults:
            self.fault_uses.clear()

    def stats(self) -> JudgeServerStats:
        return JudgeServerStats(
            chat_requests=self.chat_requests,
            by_outcome=dict(self.by_outcome),
            in_flight=self.in_flight,
            peak_in_flight=self.peak_in_flight,
            open_connections=len(self.connections),
            max_concurrent_connections=self.max_connections,
            latency_s=self.latency_s,
            jitter_s=self.jitter_s,
        )

    def configure(self, latency_s: float | None, jitter_s: float | None) -> None:
        for value in (latency_s, jitter_s):
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ValueError(f"latency and jitter must be finite and >= 0, got {value!r}")
        if latency_s is not None:
            self.latency_s = latency_s
        if jitter_s is not None:
            self.jitter_s = jitter_s

    def handle(self, conn: _Connection, method: str, path: str, body: bytes) -> None:
        if path in ("/v1/chat/completions", "/chat/completions") and method == "POST":
            self._chat(conn, body)
        elif path in ("/v1/models", "/models") and method == "GET":
            card = {"id": self.model, "object": "model", "owned_by": "openjudge-test", "max_model_len": 4096}
            conn.send_json(200, {"object": "list", "data": [card]})
        elif path == "/stats" and method == "GET":
            conn.send_json(200, asdict(self.stats()))
        elif path in ("/stats/reset", "/config") and method == "POST":
            try:
                data = json.loads(body) if body.strip() else {}
                if not isinstance(data, dict):
                    raise ValueError("the body must be a JSON object")
                if path == "/config":
                    latency, jitter = (data.get(k) for k in ("latency_s", "jitter_s"))
                    self.configure(
                        None if latency is None else _as_float(latency),
                        None if jitter is None else _as_float(jitter),
                    )
                else:
                    self.reset(faults=data.get("faults") is True)
            except ValueError as exc:
                conn.send_error(400, str(exc))
                return
            conn.send_json(200, asdict(self.stats()))
        elif path in ("/v1/chat/completions", "/v1/models", "/stats", "/stats/reset", "/config"):
            conn.send_error(405, f"method {method} not allowed on {path}")
        else:
            conn.send_error(404, f"no route for {method} {path}")

    def _chat(self, conn: _Connection, body: bytes) -> None:
        self.chat_requests += 1
        conn.start_chat()
        try:
            request, chars, plan = self._parse_chat(body)
            payload = _dumps(self._completion(request, chars, plan)) if plan.is_reply() else b""
        except _Refused as refused:
            self._count(str(refused.status))
            conn.send_error(refused.status, str(refused))
            return
        except (_BadRequest, ValueError) as exc:
            self._count("400")
            conn.send_error(400, str(exc))
            return
        if plan.action == "hang":
            self._count("hang")
            return
        delay = plan.latency
        if plan.action == "reset":
            self._count("reset")
            conn.later(delay or 0.0, functools.partial(conn.abort, rst=True))
        elif plan.status != 200:
            self._count(str(plan.status))
            extra = b"retry-after: %s\r\n" % plan.retry_after.encode() if plan.retry_after else b""
            payload = _error_body(plan.status, f"injected HTTP {plan.status} from a #oj: directive")
            conn.later(delay or 0.0, functools.partial(conn.send, plan.status, payload, extra))
        else:
            self._count("200")
            if delay is None:
                delay = self.latency_s + (self.rng.random() * self.jitter_s if self.jitter_s else 0.0)
            conn.later(delay, functools.partial(conn.send, 200, payload, b""))

    def _check_format(self, request: Mapping[str, object]) -> None:
        """Raise :class:`_Refused` for a mode this server refuses or a schema it cannot enforce."""
        kind = format_kind(request)
        if kind is None:
            return
        status = self.refuse.get(kind)
        if status is not None:
            raise _Refused(status, refusal_message(kind, status))
        schema = _schema_of(request)
        fmt = request.get("response_format")
        strict = kind == "json_schema" and isinstance(fmt, dict) and _strict(fmt.get("json_schema"))
        problem = None if schema is None else self._schema_problem(schema, strict)
        if problem is not None:
            raise _Refused(400, f"Invalid schema for response_format: {problem}")

    def _schema_problem(self, schema: dict[str, object], strict: bool) -> str | None:
        """:func:`schema_problem`, cached: graders repeat their schema (and the benchmarks count this CPU)."""
        key = (_COMPACT.encode(schema), strict)
        if key not in self._schema_problems:
            if len(self._schema_problems) >= 1024:
                self._schema_problems.clear()
            self._schema_problems[key] = schema_problem(schema, strict=strict)
        return self._schema_problems[key]

    def _count(self, outcome: str) -> None:
        self.by_outcome[outcome] = self.by_outcome.get(outcome, 0) + 1

    def _parse_chat(self, body: bytes) -> tuple[dict[str, object], int, _Plan]:
        try:
            request = json.loads(body)
        except ValueError as exc:
            raise _BadRequest(f"the body is not valid JSON: {exc}") from None
        messages = request.get("messages") if isinstance(request, dict) else None
        if not isinstance(messages, list) or not messages:
            raise _BadRequest("'messages' must be a non-empty list")
        if request.get("stream"):
            raise _BadRequest("streaming is not supported by the test judge server")
        chars = 0
        first_user: str | None = None
        steps: int | None = None
        directives: list[str] = []
        for message in messages:
            if not isinstance(message, dict):
                raise _BadRequest("each message must be an object")
            text = _text(message.get("content"))
            chars += len(text)
            if first_user is None and message.get("role") == "user":
                first_user = text
                steps = len(_STEP_RE.findall(text)) or None
            if "#oj:" in text:
                directives.extend(d for d in _DIRECTIVE_RE.findall(text) if d not in directives)
        self._check_format(request)  # before the faults: a refused request uses none of their budget
        plan = self._plan(directives, first_user or "")
        plan.steps = steps
        return request, chars, plan

    def _plan(self, directives: list[str], first_user: str) -> _Plan:
        plan = _Plan(score=self.score)
        faults: list[tuple[str, dict[str, str]]] = []
        for directive in directives:
            items: dict[str, str] = {}
            for item in directive.split(","):
                key, _, value = item.partition("=")
                if key not in _KEYS:
                    raise _BadRequest(f"unknown directive key {key!r} in #oj:{directive}")
                items[key] = value
            if "score" in items:
                number = _number("score", items["score"])
                plan.score = int(number) if number.is_integer() and "." not in items["score"] else number
            if "latency" in items:
                plan.latency = _number("latency", items["latency"])
            if len({"status", "reset", "hang", "reply"} & items.keys()) > 1:
                raise _BadRequest(f"at most one of status/reset/hang/reply per directive: #oj:{directive}")
            if {"status", "reset", "hang", "reply"} & items.keys():
                faults.append((directive, items))
        for directive, items in faults:
            if "times" in items:
                if not items["times"].isdigit():
                    raise _BadRequest(f"times must be a non-negative integer in #oj:{directive}")
                use_key = hashlib.blake2b(f"{directive}\0{first_user}".encode(), digest_size=16).digest()
                used = self.fault_uses.get(use_key, 0)
                if used >= int(items["times"]):
                    continue
                self.fault_uses[use_key] = used + 1
            _apply_fault(plan, directive, items)
            break
        return plan

    def _completion(self, request: dict[str, object], chars: int, plan: _Plan) -> dict[str, object]:
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
            "model": request.get("model") if isinstance(request.get("model"), str) else self.model,
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _content(self, request: dict[str, object], plan: _Plan) -> tuple[str, tuple[int, int] | None]:
        """The reply text and the span of its score value; cached, as graders repeat their schema."""
        schema = _schema_of(request)
        one_token = 1 in (request.get("max_tokens"), request.get("max_completion_tokens"))
        key = (_COMPACT.encode(schema), plan.score, plan.reply, one_token, plan.steps)
        cached = self._content_cache.get(key)
        if cached is None:
            if len(self._content_cache) >= 1024:
                self._content_cache.clear()
            cached = self._content_cache[key] = _render(schema, plan, one_token)
        return cached


_STEP_RE = re.compile(r'<step index="\d+">')


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
    schema: dict[str, object] | None, plan: _Plan, one_token: bool
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


def _strict(spec: object) -> bool:
    return isinstance(spec, dict) and spec.get("strict") is True


def _check_refuse(refuse: Mapping[str, int]) -> dict[str, int]:
    for kind, status in refuse.items():
        if kind not in FORMAT_KINDS:
            raise ValueError(f"refuse: unknown mode {kind!r} (modes: {', '.join(FORMAT_KINDS)})")
        if not (isinstance(status, int) and 400 <= status <= 599):
            raise ValueError(f"refuse: {kind} needs an HTTP error status 400..599, got {status!r}")
    return dict(refuse)


def _apply_fault(plan: _Plan, directive: str, items: dict[str, str]) -> None:
    if "status" in items:
        status = items["status"]
        if not status.isdigit() or not 400 <= int(status) <= 599:
            raise _BadRequest(f"status must be an HTTP error code 400..599 in #oj:{directive}")
        plan.status = int(status)
        if items.get("retry_after"):
            plan.retry_after = items["retry_after"]
            _number("retry_after", plan.retry_after)
    elif "reply" in items:
        if items["reply"] not in _REPLIES:
            raise _BadRequest(f"reply must be one of {sorted(_REPLIES)} in #oj:{directive}")
        plan.reply = items["reply"]
    else:
        plan.action = "reset" if "reset" in items else "hang"


def _schema_of(request: Mapping[str, object]) -> dict[str, object] | None:
    fmt = request.get("response_format")
    schema: object = None
    if isinstance(fmt, dict):
        if fmt.get("type") == "json_schema" and isinstance(spec := fmt.get("json_schema"), dict):
            schema = spec.get("schema")
        elif fmt.get("type") == "json_object":
            schema = fmt.get("schema")
    if schema is None and isinstance(so := request.get("structured_outputs"), dict):
        schema = so.get("json")
    if schema is None:
        schema = request.get("guided_json")
    if isinstance(schema, str):
        with contextlib.suppress(ValueError):
            schema = json.loads(schema)
    return schema if isinstance(schema, dict) else None


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


_COMPACT: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_SPACED: Final = json.JSONEncoder(ensure_ascii=False)


def _error_body(status: int, message: str) -> bytes:
    """An OpenAI-shaped error body."""
    kind, code = _ERRORS.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
    return _dumps({"error": {"message": message, "type": kind, "param": None, "code": code}})


def _dumps(value: object) -> bytes:
    return _COMPACT.encode(value).encode()


def _dumps_text(value: object) -> str:
    return _SPACED.encode(value)


class _Connection(asyncio.Protocol):
    """One client connection: parses requests in order, answers one at a time."""

    def __init__(self, state: _State) -> None:
        self._state = state
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._buf = bytearray()
        self._busy = False
        self._draining = False
        self._keep_alive = True
        self._chat = False
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        state = self._state
        state.connections.add(self)
        state.max_connections = max(state.max_connections, len(state.connections))

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._end_chat()
        self._state.connections.discard(self)

    def data_received(self, data: bytes) -> None:
        self._buf += data
        if not self._busy and not self._draining:
            self._drain()

    def _drain(self) -> None:
        self._draining = True
        try:
            while not self._busy and self._transport is not None and self._buf:
                request = self._next_request()
                if request is None:
                    return
                self._busy = True
                try:
                    self._state.handle(self, *request)
                except Exception:
                    logger.exception("judge server failed on %s %s", request[0], request[1])
                    self._keep_alive = False
                    self.send_error(500, "internal error in the test judge server")
        finally:
            self._draining = False

    def _next_request(self) -> tuple[str, str, bytes] | None:
        buf = self._buf
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if len(buf) > _MAX_HEAD:
                self._protocol_error(431, "request head too large")
            return None
        head = bytes(buf[: end + 2])
        line_end = head.find(b"\r\n")
        parts = head[:line_end].split(b" ")
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
            self._protocol_error(400, "malformed request line")
            return None
        fields = head[line_end:].lower()
        length = 0
        if (i := fields.find(b"\r\ncontent-length:")) >= 0:
            value = fields[i + 17 : fields.find(b"\r\n", i + 2)].strip()
            if not value.isdigit() or int(value) > _MAX_BODY:
                self._protocol_error(400, "bad content-length")
                return None
            length = int(value)
        if b"\r\ntransfer-encoding:" in fields:
            self._protocol_error(501, "chunked request bodies are not supported")
            return None
        total = end + 4 + length
        if len(buf) < total:
            return None
        body = bytes(buf[end + 4 : total])
        del buf[:total]
        connection = b""
        if (i := fields.find(b"\r\nconnection:")) >= 0:
            connection = fields[i + 13 : fields.find(b"\r\n", i + 2)].strip()
        self._keep_alive = connection != b"close" if parts[2] == b"HTTP/1.1" else connection == b"keep-alive"
        return parts[0].decode("latin-1"), parts[1].split(b"?", 1)[0].decode("latin-1"), body

    def _protocol_error(self, status: int, message: str) -> None:
        self._keep_alive = False
        self._buf.clear()
        self.send_error(status, message)

    def start_chat(self) -> None:
        state = self._state
        self._chat = True
        state.in_flight += 1
        state.peak_in_flight = max(state.peak_in_flight, state.in_flight)

    def _end_chat(self) -> None:
        if self._chat:
            self._chat = False
            self._state.in_flight -= 1

    def later(self, delay: float, action: Callable[[], None]) -> None:
        if delay <= 0:
            action()
        else:
            self._timer = self._loop.call_later(delay, self._fire, action)

    def _fire(self, action: Callable[[], None]) -> None:
        self._timer = None
        action()

    def send_json(self, status: int, value: object) -> None:
        self.send(status, _dumps(value), b"")

    def send_error(self, status: int, message: str) -> None:
        self.send(status, _error_body(status, message), b"")

    def send(self, status: int, body: bytes, extra_headers: bytes) -> None:
        transport = self._transport
        self._end_chat()
        if transport is None:
            return
        head = b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n%s%s\r\n" % (
            status,
            _PHRASES.get(status, b"Error"),
            len(body),
            extra_headers,
            b"" if self._keep_alive else b"connection: close\r\n",
        )
        transport.write(head + body)
        if not self._keep_alive:
            transport.close()
            return
        self._busy = False
        if self._buf and not self._draining:
            self._drain()

    def abort(self, *, rst: bool = False) -> None:
        """Close the connection without a response; ``rst`` makes the client see a TCP reset."""
        if self._transport is not None:
            sock = self._transport.get_extra_info("socket")
            if rst and sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self._transport.abort()


def _check_loopback(host: str) -> None:
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(
            f"refusing to listen on non-loopback host {host!r}: the test judge server has no "
            "authentication; use 127.0.0.1, ::1 or localhost"
        )


class JudgeServer:
    """The judge server inside the running event loop.

    Example::

        async with JudgeServer(latency_s=0.0) as srv:
            client = openai.AsyncOpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency_s: float = 0.0,
        jitter_s: float = 0.0,
        model: str = DEFAULT_MODEL,
        default_score: int | float = 3,
        seed: int = 0,
        backlog: int = 4096,
        refuse: Mapping[str, int] | None = None,
    ) -> None:
        _check_loopback(host)
        self._host = "127.0.0.1" if host == "localhost" else host  # one socket, so one port
        self._port = port
        self._backlog = backlog
        self._refuse = _check_refuse(refuse or {})
        self._config = (model, latency_s, jitter_s, default_score, seed)
        self._state: _State | None = None
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        """Bind and start serving; ``port`` is known afterwards."""
        if self._server is not None:
            raise RuntimeError("the judge server is already started")
        model, latency_s, jitter_s, score, seed = self._config
        state = _State(model=model, latency_s=0.0, jitter_s=0.0, score=score, seed=seed, refuse=self._refuse)
        state.configure(latency_s, jitter_s)
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Connection(state), self._host, self._port, backlog=self._backlog, reuse_address=True
        )
        self._state = state
        self._port = self._server.sockets[0].getsockname()[1]
        logger.debug("judge server listening on %s", self.url)

    async def aclose(self) -> None:
        """Stop listening and abort every open connection (hung requests included)."""
        server, state = self._server, self._state
        if server is None or state is None:
            return
        self._server = None
        server.close()
        for conn in list(state.connections):
            conn.abort()
        await server.wait_closed()
        for _ in range(3):  # let connection_lost callbacks run before the loop may close
            await asyncio.sleep(0)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        """The server root, e.g. ``http://127.0.0.1:PORT``."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self._port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    def _require(self) -> _State:
        if self._state is None:
            raise RuntimeError("the judge server is not started; use 'async with JudgeServer() as srv'")
        return self._state

    def stats(self) -> JudgeServerStats:
        return self._require().stats()

    def reset_stats(self, *, faults: bool = False) -> None:
        """Zero the counters (peaks restart from the current level); ``faults`` also forgets ``times`` uses."""
        self._require().reset(faults=faults)

    def set_latency(self, latency_s: float, jitter_s: float | None = None) -> None:
        self._require().configure(latency_s, jitter_s)


class JudgeServerProcess:
    """The judge server in a child process, controlled over HTTP (sync).

    Example::

        with JudgeServerProcess(latency_s=0.2) as srv:
            ...  # use srv.base_url; srv.stats()
    """

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        jitter_s: float = 0.0,
        model: str = DEFAULT_MODEL,
        port: int = 0,
        startup_timeout_s: float = 20.0,
        python: str | None = None,
        refuse: Mapping[str, int] | None = None,
    ) -> None:
        options = f"--port={port} --latency={float(latency_s)!r} --jitter={float(jitter_s)!r}"
        refusals = [f"--refuse={kind}={status}" for kind, status in _check_refuse(refuse or {}).items()]
        self._argv = [
            python or sys.executable,
            "-m",
            _MODULE,
            *options.split(),
            f"--model={model}",
            *refusals,
        ]
        self._startup_timeout_s = startup_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._port = 0
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def start(self) -> None:
        """Start the process and wait until it prints its port."""
        if self._proc is not None and self._proc.returncode is None:
            raise RuntimeError("the judge server process is already running")
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self._proc = proc = subprocess.Popen(self._argv, stdout=subprocess.PIPE, env=env)
        assert proc.stdout is not None
        line = b""
        deadline = time.monotonic() + self._startup_timeout_s
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while not line.endswith(b"\n"):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not sel.select(remaining):
                    self.stop()
                    raise RuntimeError(f"judge server did not start within {self._startup_timeout_s} s")
                chunk = os.read(proc.stdout.fileno(), 64)
                if not chunk:
                    code = proc.wait()
                    self.stop()
                    raise RuntimeError(f"judge server exited with code {code} before it was ready")
                line += chunk
        self._port = int(line.split(b"\n", 1)[0])

    def stop(self, timeout_s: float = 10.0) -> None:
        """Terminate the process this object started (kill it if it ignores SIGTERM)."""
        proc = self._proc
        if proc is None or proc.stdout is None or proc.stdout.closed:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        proc.stdout.close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def pid(self) -> int:
        return self._require().pid

    @property
    def returncode(self) -> int | None:
        """None while running; the exit code after it stopped."""
        return self._require().poll()

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def _require(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            raise RuntimeError("the judge server process was not started")
        return self._proc

    def _call(self, method: str, path: str, payload: Mapping[str, object] | None = None) -> dict[str, object]:
        self._require()
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("content-type", "application/json")
        with self._opener.open(request, timeout=10.0) as response:
            result = json.loads(response.read())
        if not isinstance(result, dict):
            raise ValueError(f"unexpected response from {path}: {result!r}")
        return result

    def stats(self) -> JudgeServerStats:
        return JudgeServerStats.from_json(self._call("GET", "/stats"))

    def reset_stats(self, *, faults: bool = False) -> None:
        self._call("POST", "/stats/reset", {"faults": faults})

    def set_latency(self, latency_s: float, jitter_s: float | None = None) -> None:
        payload: dict[str, object] = {"latency_s": latency_s}
        if jitter_s is not None:
            payload["jitter_s"] = jitter_s
        self._call("POST", "/config", payload)


async def _serve(args: argparse.Namespace, on_ready: Callable[[int], None]) -> None:
    server = JudgeServer(
        host=args.host,
        port=args.port,
        latency_s=args.latency,
        jitter_s=args.jitter,
        model=args.model,
        refuse=args.refuse,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    async with server:
        on_ready(server.port)
        await stop.wait()


def _refusal_option(item: str) -> tuple[str, int]:
    kind, _, status = item.partition("=")
    if not status.isdigit():
        raise ValueError(f"--refuse takes MODE=STATUS, e.g. json_schema=500; got {item!r}")
    return kind, int(status)


def _raise_fd_limit() -> None:
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 65536, hard))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server until SIGTERM/SIGINT; prints the port as the first stdout line."""
    parser = argparse.ArgumentParser(
        prog="python -m openjudge.testing.judge_server",
        description="Local OpenAI-compatible judge server with #oj: fault injection (tests only).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port; 0 picks a free one (default 0)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--jitter", type=float, default=0.0, help="extra uniform [0, jitter) seconds")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="model name served by /v1/models")
    parser.add_argument(
        "--refuse",
        action="append",
        default=[],
        metavar="MODE=STATUS",
        help="answer STATUS to requests in MODE (json_schema, json_object, structured_outputs), "
        "e.g. json_schema=500 as llama-cpp-python's server does; repeatable",
    )
    args = parser.parse_args(argv)
    try:
        _check_loopback(args.host)
        args.refuse = _check_refuse(dict(_refusal_option(item) for item in args.refuse))
        _State(model="", latency_s=0, jitter_s=0, score=3, seed=0).configure(args.latency, args.jitter)
    except ValueError as exc:
        parser.error(str(exc))
    _raise_fd_limit()

    def ready(port: int) -> None:
        print(port, flush=True)

    asyncio.run(_serve(args, ready))
    return 0


if __name__ == "__main__":
    sys.exit(main())
