"""The reward server scaled out on Ray Serve: two replicas behind Ray Serve's proxy, on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openjudge.integrations.serve import ServeSettings
from tests.integrations.serve.helpers import RIGHT, RULES_YAML, WRONG, write_yaml

pytestmark = pytest.mark.slow  # starts Ray Serve


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _call(url: str, body: object | None = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


@pytest.fixture
def ray_served(ray_session: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    serve = pytest.importorskip("ray.serve", reason="needs Ray Serve: pip install -e '.[serve-ray]'")
    from openjudge.integrations.serve._ray import ray_application

    monkeypatch.setenv("OPENJUDGE_SERVE_TOKEN", "a-token-for-the-replicas")
    port = _free_port()
    settings = ServeSettings(config=write_yaml(tmp_path, RULES_YAML), host="127.0.0.1", port=port)
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        serve.run(ray_application(settings, 2), name="openjudge-test", route_prefix="/")
        yield f"http://127.0.0.1:{port}"
    finally:
        serve.shutdown()


def test_two_replicas_answer_openrlhf_requests_as_the_single_process_does(ray_served: str) -> None:
    auth = {"Authorization": "Bearer a-token-for-the-replicas"}
    body = {"query": ["Q" + RIGHT, "Q" + WRONG], "prompts": ["Q", "Q"], "labels": ["2", "2"]}
    assert _call(f"{ray_served}/get_reward", body)[0] == 401  # the token reached the replicas
    processes = set()
    for _ in range(30):
        status, answer = _call(f"{ray_served}/get_reward", body, auth)
        assert status == 200 and answer["rewards"] == [1.0, 0.25]
        status, health = _call(f"{ray_served}/health")
        assert status == 200 and health["graders"] == ["correct", "format"]
        processes.add(health["process"])
    assert len(processes) == 2  # both replicas served
