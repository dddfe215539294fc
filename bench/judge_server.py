"""The local judge server's CPU per request against a minimal ``aiohttp.web`` server.

    python -m bench.judge_server [N]

Why ``openjudge.testing.judge_server`` is hand-written on ``asyncio.Protocol`` rather than
``aiohttp.web``: the benchmarks run the judge in a child process on the same cores as the
client they measure, so every microsecond the server spends is taken from the client (on a
2-core machine, directly). This script drives both servers with the same raw aiohttp client
(N requests, C=256, 200 ms latency, a ~1 kB body) and prints each server's CPU per request
(its process's user + system time). The ``aiohttp.web`` server does *less* work than ours:
it answers the fixed verdict, with no ``#oj:`` directive parsing and no schema instance.

Target: ours at most 0.8x of the minimal ``aiohttp.web`` server's CPU per request (past that,
a library server would serve as well). What bounds it: the HTTP/1.1 parsing and the event loop's
per-request callbacks; ours parses only what a chat-completions POST needs.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import orjson

from openjudge.testing.judge_server import JudgeServerProcess

C = 256
LATENCY_S = 0.2
BODY = orjson.dumps(
    {
        "model": "judge",
        "messages": [
            {"role": "system", "content": "Grade the answer. " * 50},
            {"role": "user", "content": "Question: q\nAnswer: a"},
        ],
    }
)

AIOHTTP_WEB_SERVER = """
import asyncio, sys, time
import orjson
from aiohttp import web

async def chat(request):
    body = orjson.loads(await request.read())
    text = "".join(m["content"] for m in body["messages"] if isinstance(m.get("content"), str))
    await asyncio.sleep(float(sys.argv[2]))
    content = '{"reason": "ok", "score": 3}'
    reply = {"id": "x", "object": "chat.completion", "created": int(time.time()), "model": body["model"],
             "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                          "finish_reason": "stop"}],
             "usage": {"prompt_tokens": max(1, len(text) // 4), "completion_tokens": 7, "total_tokens": 0}}
    return web.Response(body=orjson.dumps(reply), content_type="application/json")

app = web.Application()
app.router.add_post("/v1/chat/completions", chat)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""


async def _drive(url: str, n: int) -> None:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=C)) as session:
        todo = iter(range(n))

        async def worker() -> None:
            for _ in todo:
                async with session.post(
                    url, data=BODY, headers={"content-type": "application/json"}
                ) as reply:
                    if reply.status != 200:
                        raise RuntimeError(f"HTTP {reply.status}")
                    orjson.loads(await reply.read())

        await asyncio.gather(*(worker() for _ in range(C)))


def _cpu(pid: int) -> float:
    """User + system CPU seconds of a running process (Linux: /proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _server_cpu_per_request(pid: int, url: str, n: int) -> float:
    asyncio.run(_drive(url, C))  # warm: open the connections
    before = _cpu(pid)
    asyncio.run(_drive(url, n))
    return (_cpu(pid) - before) / n


def _wait_listening(url: str) -> None:
    for _ in range(100):
        try:
            asyncio.run(_drive(url, 1))
            return
        except aiohttp.ClientError:
            time.sleep(0.1)
    raise RuntimeError(f"the server at {url} did not start")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8_000
    with JudgeServerProcess(latency_s=LATENCY_S) as server:
        ours = _server_cpu_per_request(server.pid, f"{server.base_url}/chat/completions", n)
    port = 18_765
    proc = subprocess.Popen([sys.executable, "-c", AIOHTTP_WEB_SERVER, str(port), str(LATENCY_S)])
    try:
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        _wait_listening(url)
        theirs = _server_cpu_per_request(proc.pid, url, n)
    finally:
        proc.terminate()
        proc.wait()
    ratio = ours / theirs
    print(f"  {n:,} requests at C={C}, {LATENCY_S * 1000:.0f} ms latency, server CPU per request:")
    print(f"    openjudge.testing.judge_server: {ours * 1e6:.0f} us")
    print(f"    minimal aiohttp.web server:     {theirs * 1e6:.0f} us (fixed verdict, no directives)")
    print(
        f"judge server CPU / aiohttp.web's: {ratio:.2f}x (target <= 0.8x) {'MET' if ratio <= 0.8 else 'NOT MET'}\n"
        "    bounded by: HTTP/1.1 parsing and the event loop's per-request callbacks"
    )


if __name__ == "__main__":
    main()
