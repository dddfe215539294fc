"""What every connection of a test judge server shares: its settings, its counters and its routes.

:class:`JudgeState` answers each parsed request (:meth:`JudgeState.handle`): chat
completions by the plan their ``#oj:`` directives make (after the server's structured-output
rules, :class:`~openjudge.testing._schema_checks.FormatChecks`, accept them), the model list, and the control
endpoints (``/stats``, ``/stats/reset``, ``/config``) that :class:`JudgeServerStats` reads.
"""

from __future__ import annotations

import functools
import json
import math
import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Final

from openjudge.testing._judge_directives import BadRequest, FaultBudgets, read_chat
from openjudge.testing._judge_replies import Replies, dumps, error_body
from openjudge.testing._schema_checks import FormatChecks, Refused

if TYPE_CHECKING:
    from openjudge.testing._judge_http import HttpConnection

__all__ = ["DEFAULT_MODEL", "JudgeServerStats", "JudgeState", "as_float"]

DEFAULT_MODEL: Final = "openjudge-test-judge"
_ROUTES: Final = ("/v1/chat/completions", "/v1/models", "/stats", "/stats/reset", "/config")


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
            latency_s=as_float(data["latency_s"]),
            jitter_s=as_float(data["jitter_s"]),
        )


def _as_int(value: object) -> int:
    if isinstance(value, int):
        return value
    raise ValueError(f"expected an integer, got {value!r}")


def as_float(value: object) -> float:
    """``value`` as a finite float, or a ValueError saying what it was."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    raise ValueError(f"expected a finite number, got {value!r}")


class JudgeState:
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
        self.formats = FormatChecks(refuse or {})
        self.latency_s = latency_s
        self.jitter_s = jitter_s
        self.score = score
        self.rng = random.Random(seed)
        self.connections: set[HttpConnection] = set()
        self.fault_uses: FaultBudgets = {}
        self.replies = Replies()
        self.in_flight = 0
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
                raise ValueError(f"latency_s and jitter_s must be finite and >= 0, got {value!r}")
        if latency_s is not None:
            self.latency_s = latency_s
        if jitter_s is not None:
            self.jitter_s = jitter_s

    def handle(self, conn: HttpConnection, method: str, path: str, body: bytes) -> None:
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
                    latency_s, jitter_s = (data.get(k) for k in ("latency_s", "jitter_s"))
                    self.configure(
                        None if latency_s is None else as_float(latency_s),
                        None if jitter_s is None else as_float(jitter_s),
                    )
                else:
                    self.reset(faults=data.get("faults") is True)
            except ValueError as exc:
                conn.send_error(400, str(exc))
                return
            conn.send_json(200, asdict(self.stats()))
        elif path in _ROUTES:
            conn.send_error(405, f"method {method} not allowed on {path}")
        else:
            conn.send_error(404, f"no route for {method} {path}")

    def _chat(self, conn: HttpConnection, body: bytes) -> None:
        self.chat_requests += 1
        conn.start_chat()
        try:
            request, chars, plan = read_chat(
                body, default_score=self.score, budgets=self.fault_uses, check=self.formats.check
            )
            payload = (
                dumps(self.replies.completion(request, chars, plan, model=self.model))
                if plan.is_reply()
                else b""
            )
        except Refused as refused:
            self._count(str(refused.status))
            conn.send_error(refused.status, str(refused))
            return
        except (BadRequest, ValueError) as exc:
            self._count("400")
            conn.send_error(400, str(exc))
            return
        if plan.action == "hang":
            self._count("hang")
            return
        delay_s = plan.latency_s
        if plan.action == "reset":
            self._count("reset")
            conn.later(delay_s or 0.0, functools.partial(conn.abort, rst=True))
        elif plan.status != 200:
            self._count(str(plan.status))
            extra = b"retry-after: %s\r\n" % plan.retry_after_s.encode() if plan.retry_after_s else b""
            payload = error_body(plan.status, f"injected HTTP {plan.status} from a #oj: directive")
            conn.later(delay_s or 0.0, functools.partial(conn.send, plan.status, payload, extra))
        else:
            self._count("200")
            if delay_s is None:
                delay_s = self.latency_s + (self.rng.random() * self.jitter_s if self.jitter_s else 0.0)
            conn.later(delay_s, functools.partial(conn.send, 200, payload, b""))

    def _count(self, outcome: str) -> None:
        self.by_outcome[outcome] = self.by_outcome.get(outcome, 0) + 1
