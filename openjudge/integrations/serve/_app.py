"""The reward server: an aiohttp application around one :class:`RewardScorer`.

Routes: ``POST /get_reward`` (OpenRLHF's shape), ``POST /score`` (the generic shape), ``GET
/health`` and ``GET /metrics`` (Prometheus). Everything runs on one event loop: the scorer's
graders run concurrently there (and in their worker processes), at most
``max_concurrent_samples`` samples at once and ``max_pending`` admitted; a request that would
exceed ``max_pending`` is answered 429 with ``Retry-After`` before any of its samples is
graded, so a client's retry never grades a sample twice.

A failed sample goes through the scorer's failure policy as under the trainer adapters.
OpenRLHF cannot leave a sample out (a ``null`` reward sends it to a reward model it does
not have), so there a failure is never dropped: under ``drop`` and ``neutral`` it gets the
mean reward of the scored samples of its group in the request (same prompt), or 0.0 when
none was (its GRPO advantage is then zero only if its whole group failed alike), and
``extra_logs["openjudge/failed"]`` is 1.0; the generic shape says ``"reward": null``
(dropped) and ``"failed": true``. When the failure rate trips, every request is answered
503 with the reason, so the trainer stops instead of training on the failures.
"""

from __future__ import annotations

import hmac
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

import orjson
from aiohttp import web
from pydantic import JsonValue

from openjudge.integrations.scoring._guard import FailureRateExceeded
from openjudge.integrations.scoring._loader import describe_providers, load_job
from openjudge.integrations.scoring._scorer import Placement, RewardScorer, ScoredSample
from openjudge.integrations.serve._batcher import Batcher
from openjudge.integrations.serve._metrics import CONTENT_TYPE_LATEST, ServerMetrics
from openjudge.integrations.serve._settings import ServeSettings
from openjudge.integrations.serve._shapes import (
    BadRequest,
    Batch,
    generic_batch,
    generic_response,
    openrlhf_batch,
    openrlhf_response,
)

__all__ = ["Reply", "RewardServer"]

logger = logging.getLogger(__name__)

_MAX_BODY = 64 * 1024 * 1024
"""Largest request body (a batch of long responses)."""


@dataclass(frozen=True, slots=True)
class _Route:
    name: str
    parse: Callable[[object], Batch]
    render: Callable[[RewardScorer, list[ScoredSample]], dict[str, JsonValue]]
    placement: Placement


_ROUTES = {
    "/get_reward": _Route("openrlhf", openrlhf_batch, openrlhf_response, Placement(can_drop=False)),
    "/score": _Route("score", generic_batch, generic_response, Placement(can_drop=True, drop="nan")),
}


@dataclass(frozen=True, slots=True)
class Reply:
    """An HTTP answer, whatever serves it."""

    status: int
    body: bytes
    headers: dict[str, str]


def _json(body: object, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, orjson.dumps(body), {"Content-Type": "application/json", **(headers or {})})


class RewardServer:
    """Serves rewards from ``scorer`` over HTTP.

    Args:
        scorer: The graders, the reward's aggregate and the failure policy.
        settings: Where to listen, the token, ``max_pending`` and ``retry_after_s``.
        close: Awaited at shutdown (the providers' clients; :meth:`from_settings` sets it).
    """

    def __init__(
        self,
        scorer: RewardScorer,
        settings: ServeSettings,
        *,
        close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.scorer = scorer
        self.settings = settings
        self.metrics = ServerMetrics(settings.max_pending, lambda: self.pending)
        self.pending = 0
        """Samples admitted and not yet answered."""
        self._close = close
        self._batcher = Batcher(scorer, settings.max_concurrent_samples or settings.max_pending)

    @classmethod
    def from_settings(cls, settings: ServeSettings) -> RewardServer:
        """Build the graders of the settings' YAML (``settings.config``).

        Raises:
            ConfigError: The YAML is unreadable or invalid, or names no such aggregator.
        """
        _, job = load_job(settings)
        scorer = RewardScorer(
            job.runner,
            settings,
            grader_providers=job.grader_providers,
            describe_providers=describe_providers(job),
            source=settings.config or "the graders config",
            where="openjudge serve",
            reserve_keys=False,  # an aggregator named "reward" is common; openjudge/reward is the reward
        )

        async def close() -> None:
            for provider in job.providers.values():
                await provider.aclose()
            if job.cache is not None:
                job.cache.close()

        return cls(scorer, settings, close=close)

    def app(self) -> web.Application:
        """The aiohttp application (serve it with :func:`aiohttp.web.run_app` or an ``AppRunner``)."""
        app = web.Application(client_max_size=_MAX_BODY)
        app.router.add_route("*", "/{path:.*}", self._aiohttp)
        if self._close is not None:
            close = self._close

            async def on_cleanup(_: web.Application) -> None:
                await close()

            app.on_cleanup.append(on_cleanup)
        return app

    @asynccontextmanager
    async def listen(self) -> AsyncIterator[str]:
        """Serve on the settings' host and port while the block runs; yields the URL
        (``http://host:port``, the port taken when ``port`` is 0). The providers are closed after."""
        runner = web.AppRunner(self.app(), access_log=None)  # an access log would write any ?token=
        await runner.setup()
        try:
            await web.TCPSite(runner, self.settings.host, self.settings.port).start()
            host, port = runner.addresses[0][:2]
            yield f"http://{f'[{host}]' if ':' in host else host}:{port}"
        finally:
            await runner.cleanup()

    async def _aiohttp(self, request: web.Request) -> web.Response:
        answer = await self.reply(request.method, request.path, request.headers, request.query, request.read)
        return web.Response(body=answer.body, status=answer.status, headers=answer.headers)

    # -- requests, whatever serves them (aiohttp here, Ray Serve's proxy in _ray) ------------

    async def reply(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        query: Mapping[str, str],
        read: Callable[[], Awaitable[bytes]],
    ) -> Reply:
        """Answer one HTTP request (``read`` returns its body; called only on the POST routes)."""
        if path == "/health":
            return await self._health() if method == "GET" else _not_allowed("GET")
        token = self.settings.token
        if token is not None and not _authorized(token, headers, query):
            self.metrics.request(path.lstrip("/"), 401)
            return _json(
                {
                    "error": "a bearer token is required: send 'Authorization: Bearer <token>' (or ?token=<token>)"
                },
                401,
                {"WWW-Authenticate": "Bearer"},
            )
        if path == "/metrics":
            if method != "GET":
                return _not_allowed("GET")
            return Reply(200, self.metrics.exposition(), {"Content-Type": CONTENT_TYPE_LATEST})
        route = _ROUTES.get(path)
        if route is None:
            return _json(
                {"error": f"no route {path}: POST /get_reward, POST /score, GET /health, GET /metrics"}, 404
            )
        if method != "POST":
            return _not_allowed("POST")
        answer = await self._answer(route, await read())
        self.metrics.request(route.name, answer.status)
        return answer

    async def _answer(self, route: _Route, body: bytes) -> Reply:
        try:
            batch = route.parse(orjson.loads(body))
        except orjson.JSONDecodeError as exc:
            return _json({"error": f"the body is not JSON: {exc}"}, 400)
        except BadRequest as exc:
            return _json({"error": str(exc)}, 400)
        n = len(batch.samples)
        limit = self.settings.max_pending
        if n > limit:
            return _json(
                {
                    "error": f"{n} samples in one request, more than max_pending ({limit}): send smaller batches"
                },
                413,
            )
        if self.pending + n > limit:
            return _json(
                {
                    "error": f"busy: {self.pending} samples pending of {limit}; retry after {self.settings.retry_after_s} s"
                },
                429,
                {"Retry-After": str(self.settings.retry_after_s)},
            )
        self.pending += n
        start = time.perf_counter()
        try:
            scored = await self._batcher.score(batch.samples, batch.groups, route.placement)
        except FailureRateExceeded as exc:
            return _json({"error": str(exc)}, 503)
        finally:
            self.pending -= n
            self.metrics.latency.labels(route.name).observe(time.perf_counter() - start)
        self._count(route.name, scored)
        return _json(route.render(self.scorer, scored))

    def _count(self, route: str, scored: list[ScoredSample]) -> None:
        failed = sum(s.failed for s in scored)
        if failed:
            self.metrics.samples.labels(route, "failed").inc(failed)
        if len(scored) > failed:
            self.metrics.samples.labels(route, "scored").inc(len(scored) - failed)
        for s in scored:
            for name in s.errors:
                self.metrics.grader_errors.labels(name, self.scorer.error_kind(s, name)).inc()

    async def _health(self) -> Reply:
        problem = await self.scorer.ledger.problem()
        body: dict[str, JsonValue] = {
            "status": "ok" if problem is None else "stopped",
            "reward": self.scorer.aggregate,
            "graders": list(self.scorer.grader_names),
            "pending": self.pending,
            "max_pending": self.settings.max_pending,
            "process": os.getpid(),
        }
        if problem is not None:
            body["problem"] = problem
        return _json(body, 200 if problem is None else 503)


def _authorized(token: str, headers: Mapping[str, str], query: Mapping[str, str]) -> bool:
    header = headers.get("Authorization", "")
    given = header[7:] if header.startswith("Bearer ") else query.get("token", "")
    return hmac.compare_digest(given.encode(), token.encode())


def _not_allowed(method: str) -> Reply:
    return _json({"error": f"use {method}"}, 405, {"Allow": method})
