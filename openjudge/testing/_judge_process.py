"""The test judge server in a child process, controlled over HTTP from synchronous code.

A child process serves any client: another event loop (trio), threads, subprocesses of
the test (``openjudge run``), Ray actors, and benchmarks that measure the client's CPU
apart from the server's. Exported as :class:`openjudge.testing.judge_server.JudgeServerProcess`.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Final, Self

from openjudge.testing._judge_state import DEFAULT_MODEL, JudgeServerStats
from openjudge.testing._schema_checks import check_refuse

__all__ = ["JudgeServerProcess"]

_MODULE: Final = "openjudge.testing.judge_server"


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
        options = f"--port={port} --latency-s={float(latency_s)!r} --jitter-s={float(jitter_s)!r}"
        refusals = [f"--refuse={kind}={status}" for kind, status in check_refuse(refuse or {}).items()]
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
