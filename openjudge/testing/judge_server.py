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

One concept per module: HTTP/1.1 on ``asyncio.Protocol`` (``_judge_http``), ``#oj:``
directives read into a plan (``_judge_directives``), the reply bodies (``_judge_replies``),
settings, counters and routes (``_judge_state``), the structured-output modes and schemas
a server refuses (``_schema_checks``) and the child-process controller
(``_judge_process``); this module is the public face and the command line.

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
character (whitespace, quote, ``<``). Example: ``#oj:status=429,retry_after_s=0.2,times=1``.

- ``score=<number>``: the score placed in the reply (default 3), kept to what the
  request's schema allows (see above); without a schema it is written as given.
- ``latency_s=<seconds>``: latency of this request whatever its outcome. Otherwise
  successful replies wait the server latency (plus uniform ``[0, jitter_s)``) and
  faults fire at once.
- Faults, at most one per directive: ``status=<400..599>`` (optional
  ``retry_after_s=<seconds>``, sent verbatim as ``Retry-After``), ``reset`` (abort the
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
  only it consumes a use. ``times`` and ``retry_after_s`` on other keys are ignored.

An invalid directive gets a 400 ``invalid_request_error`` naming the problem.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import logging
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Self

from openjudge.testing._judge_http import HttpConnection
from openjudge.testing._judge_process import JudgeServerProcess
from openjudge.testing._judge_state import DEFAULT_MODEL, JudgeServerStats, JudgeState
from openjudge.testing._schema_checks import check_refuse

__all__ = ["DEFAULT_MODEL", "JudgeServer", "JudgeServerProcess", "JudgeServerStats", "main"]

logger = logging.getLogger(__name__)


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
        self._refuse = check_refuse(refuse or {})
        self._config = (model, latency_s, jitter_s, default_score, seed)
        self._state: JudgeState | None = None
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        """Bind and start serving; ``port`` is known afterwards."""
        if self._server is not None:
            raise RuntimeError("the judge server is already started")
        model, latency_s, jitter_s, score, seed = self._config
        state = JudgeState(
            model=model, latency_s=0.0, jitter_s=0.0, score=score, seed=seed, refuse=self._refuse
        )
        state.configure(latency_s, jitter_s)
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: HttpConnection(state), self._host, self._port, backlog=self._backlog, reuse_address=True
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

    def _require(self) -> JudgeState:
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


async def _serve(args: argparse.Namespace, on_ready: Callable[[int], None]) -> None:
    server = JudgeServer(
        host=args.host,
        port=args.port,
        latency_s=args.latency_s,
        jitter_s=args.jitter_s,
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
    parser.add_argument("--latency-s", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--jitter-s", type=float, default=0.0, help="extra uniform [0, jitter-s) seconds")
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
        args.refuse = check_refuse(dict(_refusal_option(item) for item in args.refuse))
        JudgeState(model="", latency_s=0, jitter_s=0, score=3, seed=0).configure(
            args.latency_s, args.jitter_s
        )
    except ValueError as exc:
        parser.error(str(exc))
    _raise_fd_limit()

    def ready(port: int) -> None:
        print(port, flush=True)

    asyncio.run(_serve(args, ready))
    return 0


if __name__ == "__main__":
    sys.exit(main())
