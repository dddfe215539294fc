"""A scripted OpenAI-compatible judge on 127.0.0.1 for the group tests.

It ranks listwise candidates by their ``q<k>`` quality tag (best first), counts requests
per query, and never answers a request whose query contains ``#hang`` (the client's
timeout must end it). Runs its own event loop in a thread; stop it with :meth:`close`.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from collections import Counter
from types import TracebackType

from aiohttp import web

from tests.integrations.verl.group.scripted import quality

_QUERY = re.compile(r"<query>\n(.*?)\n</query>", re.DOTALL)
_CANDIDATE = re.compile(r'<candidate id="(R\d+)">\n(.*?)\n</candidate>', re.DOTALL)


class ScriptedJudge:
    """The judge server (see the module docstring); ``calls`` counts requests per query."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None
        self.port = 0
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _reply(self, request: web.Request) -> web.Response:
        body = await request.json()
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        found = _QUERY.search(user)
        query = found.group(1) if found else ""
        with self._lock:
            self.calls[query] += 1
        if "#hang" in query:
            assert self._stopping is not None
            await self._stopping.wait()  # until the server stops: the client's timeout ends it first
            return web.Response(status=503)
        ranked = sorted(_CANDIDATE.findall(user), key=lambda c: (-quality(c[1]), c[0]))
        content = json.dumps({"reason": "by quality tag", "ranking": [cid for cid, _ in ranked]})
        return web.json_response(
            {
                "id": "chatcmpl-scripted",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "scripted"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
            }
        )

    async def _start(self) -> None:
        self._stopping = asyncio.Event()
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._reply)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()

    async def _stop(self) -> None:
        if self._stopping is not None:
            self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()

    def __enter__(self) -> ScriptedJudge:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()

    def calls_for(self, marker: str) -> int:
        """Requests whose query contains ``marker``."""
        with self._lock:
            return sum(count for query, count in self.calls.items() if marker in query)
