"""The ``sandbox_fusion`` backend: run jobs on a SandboxFusion service over HTTP.

SandboxFusion (ByteDance; the code sandbox VERL's reward functions call) runs a
program sent to ``POST /run_code`` as ``{"code", "stdin", "language", "run_timeout",
"compile_timeout", "memory_limit_MB", "files", "fetch_files"}`` and answers
``{"status": "Success" | "Failed" | "SandboxError", "message", "run_result":
{"status": "Finished" | "TimeLimitExceeded" | "Error", "return_code", "stdout", "stderr",
"execution_time"}, ...}``.

The program sent is the same child harness the local backends run (the solution is
``exec``-ed by it), made self-contained; it reports its facts as lines on standard
output that start with a fresh random marker, which this backend removes from the
output before comparing it. The service provides the isolation. Failures of the
service (connection errors, HTTP errors, ``SandboxError``) raise
:class:`~openjudge.graders.code._sandbox.SandboxError` after bounded retries, so they
never become a score.
"""

from __future__ import annotations

import json
import math
import secrets
from typing import Any

import anyio
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, stop_before_delay
from tenacity.wait import wait_random_exponential

from openjudge.graders.code._local import HARNESS_DIR, job_message
from openjudge.graders.code._reports import RunFacts, finish_run, parse_report
from openjudge.graders.code._sandbox import SandboxError, SandboxJob, SandboxLimits, SandboxRun
from openjudge.models._loop_local import LoopLocal

__all__ = ["SandboxFusionBackend", "remote_program", "split_output"]

_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_HARNESS_MODULES = ("values", "confine", "verifier", "main")
_SNIPPET = 300


class _Retryable(Exception):
    pass


def remote_program(job: SandboxJob, marker: str) -> str:
    """A self-contained Python program that runs ``job`` under the harness and reports with ``marker``."""
    sources = {name: (HARNESS_DIR / f"{name}.py").read_text(encoding="utf-8") for name in _HARNESS_MODULES}
    job_json = json.dumps(job_message(job))
    return (
        "import os, sys, types\n"
        f"_SOURCES = {sources!r}\n"
        "_package = types.ModuleType('harness'); _package.__path__ = []; sys.modules['harness'] = _package\n"
        "for _name, _source in _SOURCES.items():\n"
        "    _module = types.ModuleType('harness.' + _name); _module.__package__ = 'harness'\n"
        "    sys.modules['harness.' + _name] = _module\n"
        "    exec(compile(_source, 'harness/' + _name + '.py', 'exec'), _module.__dict__)\n"
        "_main = sys.modules['harness.main']\n"
        "_out = os.dup(1)\n"
        f"def _sink(line, _write=os.write, _marker={marker!r}):\n"
        "    _write(_out, ('\\n' + _marker + line).encode())\n"
        "sys.argv = ['solution.py']\n"
        "for _stream in (sys.stdout, sys.stderr):\n"
        "    _stream.reconfigure(encoding='utf-8', errors='backslashreplace')\n"
        "builtins = __import__('builtins'); builtins.exit = builtins.quit = sys.exit\n"
        f"_status = _main.run_job(__import__('json').loads({job_json!r}), _main.Emitter(sink=_sink))\n"
        "os._exit(_status)\n"
    )


def split_output(stdout: str, marker: str) -> tuple[str, bytes]:
    """The program's own output, and the report lines (each was written as ``"\\n" + marker + line``)."""
    kept: list[str] = []
    reports: list[str] = []
    tag = "\n" + marker
    position = 0
    while (found := stdout.find(tag, position)) != -1:
        kept.append(stdout[position:found])
        end = stdout.find("\n", found + len(tag))
        end = len(stdout) if end == -1 else end
        reports.append(stdout[found + len(tag) : end])
        position = end + 1
    kept.append(stdout[position:])
    return "".join(kept), "\n".join(reports).encode()


class SandboxFusionBackend:
    """Runs jobs on a SandboxFusion service (see the module docstring).

    Args:
        url: The ``run_code`` endpoint, e.g. ``http://localhost:8080/run_code``.
        max_attempts: Attempts per job on connection errors, 408, 429 and 5xx.
        max_retry_s: Time cap of those attempts together (on top of the run time).
        headers: Extra HTTP headers (e.g. an authorization header of a gateway).
    """

    name = "sandbox_fusion"

    def __init__(
        self,
        url: str,
        *,
        max_attempts: int = 3,
        max_retry_s: float = 30.0,
        headers: dict[str, str] | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"sandbox_url must be an http(s) URL, got {url!r}")
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        self.url = url
        self.max_attempts = max_attempts
        self.max_retry_s = max_retry_s
        self._headers = {"Accept": "application/json", **(headers or {})}
        self._clients: LoopLocal[Any] = LoopLocal(self._new_client)

    def __repr__(self) -> str:
        return f"SandboxFusionBackend(url={self.url!r})"

    @staticmethod
    def _new_client() -> Any:
        import httpx  # a core dependency, imported only when this backend is used

        return httpx.AsyncClient()

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop."""
        await self._clients.get().aclose()

    async def _post(self, payload: dict[str, object], timeout_s: float) -> dict[str, Any]:
        import httpx

        client = self._clients.get()
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_attempts) | stop_before_delay(self.max_retry_s),
            wait=wait_random_exponential(multiplier=0.5, max=4.0),
            retry=retry_if_exception_type(_Retryable),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    try:
                        response = await client.post(
                            self.url, json=payload, headers=self._headers, timeout=timeout_s
                        )
                    except httpx.TransportError as exc:
                        raise _Retryable(f"{type(exc).__name__}: {exc}") from exc
                    if response.status_code in _RETRY_STATUS:
                        raise _Retryable(f"HTTP {response.status_code}: {response.text[:_SNIPPET]}")
                    if response.status_code >= 400:
                        raise SandboxError(
                            f"SandboxFusion answered HTTP {response.status_code}: {response.text[:_SNIPPET]}",
                            "provider_error",
                        )
                    try:
                        body = response.json()
                    except ValueError as exc:
                        raise SandboxError(
                            "SandboxFusion answered with invalid JSON", "provider_error"
                        ) from exc
                    if not isinstance(body, dict):
                        raise SandboxError("SandboxFusion answered with a non-object", "provider_error")
                    return body
        except _Retryable as exc:
            raise SandboxError(
                f"SandboxFusion at {self.url} failed after {self.max_attempts} attempts: {exc}",
                "provider_error",
            ) from exc
        raise AssertionError("unreachable: tenacity reraises the last error")

    async def run(self, job: SandboxJob, limits: SandboxLimits) -> SandboxRun:
        marker = "@openjudge-" + secrets.token_hex(12) + "@"
        try:
            program = remote_program(job, marker)
        except ValueError as exc:
            raise SandboxError(f"the test's arguments cannot be sent to the sandbox: {exc}") from exc
        run_timeout_s = math.ceil(limits.timeout_s)
        payload: dict[str, object] = {
            "code": program,
            "stdin": job.stdin,
            "language": "python",
            "compile_timeout": run_timeout_s,
            "run_timeout": run_timeout_s,
            "memory_limit_MB": limits.memory_mb or 1024,
            "files": {},
            "fetch_files": [],
        }
        start = anyio.current_time()
        body = await self._post(payload, timeout_s=2 * run_timeout_s + 30)
        elapsed_s = anyio.current_time() - start
        status = body.get("status")
        result = body.get("run_result")
        if status == "SandboxError" or not isinstance(result, dict):
            message = str(body.get("message") or "no run_result")[:_SNIPPET]
            raise SandboxError(f"SandboxFusion could not run the program: {message}", "provider_error")
        raw_stdout = result.get("stdout")
        stdout, reports = split_output(raw_stdout if isinstance(raw_stdout, str) else "", marker)
        returncode = result.get("return_code")
        duration_s = result.get("execution_time")
        facts = RunFacts(
            backend=self.name,
            returncode=returncode if isinstance(returncode, int) else None,
            stdout=stdout[: limits.max_output_bytes],
            stderr=str(result.get("stderr") or "")[: limits.max_output_bytes],
            elapsed_s=float(duration_s) if isinstance(duration_s, int | float) else elapsed_s,
            timed_out=result.get("status") == "TimeLimitExceeded",
            output_overflow=len(stdout.encode()) > limits.max_output_bytes,
            signal_in_status=False,
        )
        return finish_run(facts, parse_report(reports), len(job.calls))
