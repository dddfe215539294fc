"""The server driven by OpenRLHF's own reward client (``SingleTurnAgentExecutor._fetch_rewards_via_http``).

OpenRLHF does not install here (it pins CUDA packages: flash-attn, deepspeed), and its
package ``__init__`` imports DeepSpeed. Its client module, ``openrlhf/utils/agent.py``, needs
only aiohttp and its logging helper, so the test runs those two files of a real wheel
(``pip download openrlhf==0.11.2 --no-deps``; ``OPENRLHF_WHEEL`` names it) in process, under
empty parent packages. Without the wheel the test is skipped: the request shape alone is
tested in test_server.py.
"""

from __future__ import annotations

import asyncio
import os
import sys
import types
import zipfile
from pathlib import Path
from typing import Any

import pytest

from openjudge.integrations.serve import TOKEN_ENV, RewardServer, ServeSettings
from openjudge.testing.judge_server import JudgeServerProcess
from tests.integrations.serve.helpers import (
    DOWN,
    JUDGE_YAML,
    RIGHT,
    RULES_YAML,
    WRONG,
    until_pending,
    write_yaml,
)

pytestmark = pytest.mark.anyio

_MODULES = ("openrlhf.utils.logging_utils", "openrlhf.utils.agent")


@pytest.fixture
def openrlhf_agent(monkeypatch: pytest.MonkeyPatch) -> Any:
    """OpenRLHF's ``openrlhf.utils.agent`` module, from the wheel ``OPENRLHF_WHEEL`` names."""
    wheel = os.environ.get("OPENRLHF_WHEEL")
    if not wheel or not Path(wheel).is_file():
        pytest.skip("set OPENRLHF_WHEEL to an OpenRLHF wheel (pip download openrlhf==0.11.2 --no-deps)")
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with zipfile.ZipFile(wheel) as archive:
        sources = {
            name: archive.read(
                next(n for n in archive.namelist() if n.endswith(name.replace(".", "/") + ".py"))
            )
            for name in _MODULES
        }
    for package in ("openrlhf", "openrlhf.utils"):  # empty parents: their __init__ needs DeepSpeed
        monkeypatch.setitem(sys.modules, package, types.ModuleType(package))
    for name in _MODULES:
        module = types.ModuleType(name)
        monkeypatch.setitem(sys.modules, name, module)
        exec(compile(sources[name], f"{wheel}/{name}", "exec"), module.__dict__)
    return sys.modules["openrlhf.utils.agent"]


async def test_openrlhf_client_gets_one_reward_per_query(openrlhf_agent: Any, tmp_path: Path) -> None:
    server = RewardServer.from_settings(ServeSettings(config=write_yaml(tmp_path, RULES_YAML), port=0))
    async with server.listen() as url:
        executor = openrlhf_agent.SingleTurnAgentExecutor(f"{url}/get_reward")
        (info,) = await executor._fetch_rewards_via_http(["Q: 1+1?" + RIGHT], ["Q: 1+1?"], ["2"])
        (wrong,) = await executor._fetch_rewards_via_http(["Q: 1+1?" + WRONG], ["Q: 1+1?"], ["2"])
    # what SingleTurnAgentExecutor.execute reads from the answer
    assert info["rewards"] == [1.0] and info["scores"] == [1.0]
    assert info["extra_logs"]["openjudge/correct"] == [1.0]
    assert wrong["rewards"] == [0.25] and wrong["extra_logs"]["openjudge/failed"] == [0.0]


async def test_openrlhf_client_retries_a_429_and_gets_its_reward(
    openrlhf_agent: Any, tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    config = write_yaml(tmp_path, JUDGE_YAML.format(base_url=judge_server.base_url))
    server = RewardServer.from_settings(ServeSettings(config=config, port=0, max_pending=1))
    async with server.listen() as url:
        executor = openrlhf_agent.SingleTurnAgentExecutor(f"{url}/get_reward")
        held = asyncio.create_task(
            executor._fetch_rewards_via_http(["p #oj:latency_s=0.5,score=5"], ["p"], [None])
        )
        await until_pending(server, 1)
        (second,) = await executor._fetch_rewards_via_http(
            ["p #oj:score=3"], ["p"], [None]
        )  # 429, retried after 1 s
        (first,) = await held
        (failed,) = await executor._fetch_rewards_via_http([f"p {DOWN}"], ["p"], [None])
    assert first["rewards"] == [1.0] and second["rewards"] == [0.5]
    assert failed["rewards"] == [0.0] and failed["extra_logs"]["openjudge/failed"] == [1.0]
    counted = server.metrics.exposition().decode()
    assert 'openjudge_serve_requests_total{route="openrlhf",status="429"} 1.0' in counted
