"""Planted credentials never reach an output, nor a server they were not meant for.

Canaries: ``OPENAI_API_KEY`` in the environment, a key written literally in the YAML,
``user:pass@`` in a base_url, and a server whose 401 and 500 bodies echo whatever
credentials it received. One ``openjudge run`` over providers of every kind then
writes results and an HTML report; each output (results JSONL, report, stdout,
stderr, DEBUG logs) is scanned, and so are exceptions (with tracebacks) and reprs of
providers and configs.
"""

from __future__ import annotations

import base64
import http.server
import json
import logging
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from openjudge.cli import main
from openjudge.config._build import build_job
from openjudge.config._loader import load_config
from openjudge.jobs._results import read_header
from openjudge.models._errors import ChatModelError
from openjudge.models._secrets import redact, safe_url
from openjudge.providers._litellm import LiteLLMChatModel
from openjudge.providers.openai import OpenAIChatModel
from openjudge.providers.vllm import VLLMChatModel
from openjudge.providers.vllm_reward import VLLMRewardModel
from tests._fixtures.extras import need_litellm

pytestmark = pytest.mark.filterwarnings("ignore:Item 'summary' on TypedDict class:UserWarning")

ENV_KEY = "sk-canary-env-0123456789abcdef"
YAML_KEY = "canary-yaml-key-7f3a9c"  # not shaped like a key: only exact redaction can catch it
URL_USER = "canaryuser"
URL_PASSWORD = "canary-pass-5e8d21"
CANARIES = (ENV_KEY, YAML_KEY, URL_PASSWORD, base64.b64encode(f"{URL_USER}:{URL_PASSWORD}".encode()).decode())
VERDICT = json.dumps({"reason": "fine", "score": 3})


class EchoingJudge(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible judge that echoes credentials in its errors, as careless servers do."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        auth = self.headers.get("authorization", "")
        self.seen.append(auth)
        if auth.startswith("Basic "):
            decoded = base64.b64decode(auth.removeprefix("Basic ")).decode()
            self._send(500, {"error": {"message": f"upstream refused {decoded} ({auth})"}})
        elif auth and auth != "Bearer EMPTY":
            key = auth.removeprefix("Bearer ")
            self._send(401, {"error": {"message": f"Incorrect API key provided: {key}. Header: {auth}"}})
        else:
            choice = {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": VERDICT},
            }
            self._send(200, {"model": "judge", "choices": [choice], "usage": {"prompt_tokens": 9}})

    def _send(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), EchoingJudge)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    EchoingJudge.seen = []
    try:
        yield f"127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


CONFIG = """
providers:
  yaml_key:   {{kind: openai, model: judge, base_url: "http://{host}/v1", api_key: {yaml_key}, max_retries: 0}}
  url_creds:  {{kind: vllm, model: judge, base_url: "http://{user}:{password}@{host}/v1", max_retries: 0}}
  env_key:    {{kind: openai, model: judge, base_url: "http://{host}/v1", max_retries: 0}}
  via_litellm: {{kind: litellm, model: hosted_vllm/judge, base_url: "http://{host}/v1", max_retries: 0}}
graders:
{graders}
cache: {{enabled: false}}
"""
PROVIDERS = ("yaml_key", "url_creds", "env_key", "via_litellm")


def write_config(tmp_path: Path, host: str) -> Path:
    graders = "\n".join(
        f"  {p}_judge: {{type: llm, provider: {p}, params: {{template: 'Rate: {{answer}}', score_range: [1, 5]}}}}"
        for p in PROVIDERS
    )
    path = tmp_path / "config.yaml"
    path.write_text(
        CONFIG.format(host=host, yaml_key=YAML_KEY, user=URL_USER, password=URL_PASSWORD, graders=graders)
    )
    return path


def leaks(text: str) -> list[str]:
    return [c for c in (*CANARIES, URL_USER + ":") if c in text]


def test_no_output_of_a_run_carries_a_planted_secret(
    tmp_path: Path,
    server: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    need_litellm()  # one of the providers is litellm's
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    caplog.set_level(logging.DEBUG)
    config = write_config(tmp_path, server)
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": f"s{i}", "answer": f"answer {i}"}) + "\n" for i in range(3)))
    out, report = tmp_path / "results.jsonl", tmp_path / "report.html"

    assert main(["run", str(config), "--data", str(data), "--out", str(out), "--report", str(report)]) == 0
    captured = capsys.readouterr()

    # The run did reach the server through every provider, and each failed as planted.
    assert read_header(out) is not None  # the first line binds the file to its job
    records = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    assert len(records) == 3
    results = records[0]["results"]
    assert results["yaml_key_judge"]["type"] == "error" and "HTTP 401" in results["yaml_key_judge"]["message"]
    assert (
        results["url_creds_judge"]["type"] == "error" and "HTTP 500" in results["url_creds_judge"]["message"]
    )
    assert results["env_key_judge"]["score"] == 3.0 and results["via_litellm_judge"]["score"] == 3.0
    # OPENAI_API_KEY went nowhere: a server named by base_url gets its own key or none.
    assert sorted(set(EchoingJudge.seen)) == sorted(
        {"", "Bearer EMPTY", f"Bearer {YAML_KEY}", "Basic " + CANARIES[3]}
    )
    for name, text in {
        "results": out.read_text(),
        "report": report.read_text(),
        "stdout": captured.out,
        "stderr": captured.err,
        "DEBUG logs": caplog.text,
    }.items():
        assert leaks(text) == [], name


@pytest.mark.anyio
async def test_exceptions_and_reprs_carry_no_planted_secret(
    tmp_path: Path, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_litellm()  # one of the providers is litellm's
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    job = build_job(load_config(write_config(tmp_path, server)), use_cache=False)
    texts: list[str] = [repr(load_config(tmp_path / "config.yaml")), repr(job)]
    for name in ("yaml_key", "url_creds"):
        model = job.providers[name]
        texts += [repr(model), str(model.transport.endpoint), str(model.transport.connection_key)]
        with pytest.raises(ChatModelError) as info:
            await model.achat([{"role": "user", "content": "hi"}])
        texts += [str(info.value), repr(info.value), "".join(traceback.format_exception(info.value))]
        await model.aclose()
    url = f"http://{URL_USER}:{URL_PASSWORD}@{server}/v1"
    for built in (
        OpenAIChatModel("judge", base_url=url),
        VLLMChatModel("judge", base_url=url),
        LiteLLMChatModel("hosted_vllm/judge", base_url=url),
        VLLMRewardModel(url),
    ):
        texts.append(repr(built))
    assert [leaks(t) for t in texts] == [[] for _ in texts]


def test_redaction_rules() -> None:
    text = (
        "Incorrect API key provided: sk-abcdefgh12345678. Authorization: Bearer abc.def-123456 "
        'http://bob:hunter22@host:8000/v1 api_key="zz-123456" {"x-api-key": "k-98765"} mine-9876543'
    )
    assert redact(text, ["mine-9876543"]) == (
        "Incorrect API key provided: ***. Authorization: Bearer *** "
        'http://***@host:8000/v1 api_key="***" {"x-api-key": "***"} ***'
    )
    assert safe_url("https://bob:hunter22@host:8000/v1?api_key=abc123") == "https://host:8000/v1?api_key=***"
    assert safe_url(None) == ""
