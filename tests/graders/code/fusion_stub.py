"""A local stand-in for SandboxFusion's ``POST /run_code``: it really runs the program (unsandboxed).

It answers in SandboxFusion's shape (``status``, ``message``, ``run_result`` with
``status``/``return_code``/``stdout``/``stderr``/``execution_time``), as VERL's
``verl/utils/reward_score/sandbox_fusion/utils.py`` reads it, and can be told to fail:
``fail_next`` answers the next requests with those HTTP status codes, ``sandbox_error``
answers ``{"status": "SandboxError"}``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class FusionStub:
    url: str = ""
    requests: list[dict[str, object]] = field(default_factory=list)
    fail_next: list[int] = field(default_factory=list)
    sandbox_error: bool = False


def _run(request: dict[str, object]) -> dict[str, object]:
    timeout_s = float(str(request.get("run_timeout", 10)))
    start = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", str(request["code"])],
            input=str(request.get("stdin") or ""),
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        result: dict[str, object] = {
            "status": "TimeLimitExceeded",
            "return_code": None,
            "stdout": stdout,
            "stderr": "",
        }
        return {"status": "Failed", "message": "", "compile_result": None, "run_result": result}
    result = {
        "status": "Finished",
        "return_code": done.returncode,
        "stdout": done.stdout,
        "stderr": done.stderr,
        "execution_time": time.monotonic() - start,
    }
    status = "Success" if done.returncode == 0 else "Failed"
    return {"status": status, "message": "", "compile_result": None, "run_result": result, "files": {}}


@contextmanager
def fusion_stub() -> Iterator[FusionStub]:
    """A running stub on 127.0.0.1; ``stub.url`` is its ``run_code`` endpoint."""
    stub = FusionStub()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            stub.requests.append(request)
            if stub.fail_next:
                self._answer(stub.fail_next.pop(0), {"detail": "injected failure"})
            elif stub.sandbox_error:
                self._answer(200, {"status": "SandboxError", "message": "injected sandbox error"})
            elif self.path != "/run_code":
                self._answer(404, {"detail": "not found"})
            else:
                self._answer(200, _run(request))

        def _answer(self, status: int, body: dict[str, object]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stub.url = f"http://127.0.0.1:{server.server_address[1]}/run_code"
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
