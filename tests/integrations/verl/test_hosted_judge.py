"""``kind: verl``: the judge VERL hosts (``reward_router_address``), and the reward-model guards."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from verl.trainer.ppo.reward import load_reward_manager

from openjudge.config import ConfigError
from openjudge.graders.llm_grader import LLMGrader
from openjudge.integrations.verl import OpenJudgeRewardManager, compute_score
from openjudge.integrations.verl._settings import SettingsError
from openjudge.testing.judge_server import JudgeServerProcess
from tests.integrations.verl.helpers import (
    FAULT_PROMPTS,
    make_batch,
    make_tokenizer,
    trainer_config,
    words_of,
)

pytestmark = pytest.mark.slow  # real VERL managers and trainers (seconds per test)

ROOT = Path(__file__).resolve().parents[3]
TOKENIZER = make_tokenizer(words_of(FAULT_PROMPTS))

HOSTED_YAML = """\
providers:
  judge:
    kind: verl            # base_url and model come from VERL
    timeout_s: 2
    max_retries: 0
graders:
  quality:
    type: llm
    provider: judge
    params:
      template: "Question: {question}\\nAnswer: {answer}\\nScore 1 to 5."
      score_range: [1, 5]
    mapper: {question: prompt, answer: response}
"""


@pytest.fixture(scope="module")
def hosted_yaml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hosted") / "graders.yaml"
    path.write_text(HOSTED_YAML, encoding="utf-8")
    return path


def router_address(server: JudgeServerProcess) -> str:
    """What VERL passes: the router's ``host:port``."""
    return server.base_url.removeprefix("http://").removesuffix("/v1")


def documented_overrides(graders: Path) -> list[str]:
    """The frozen-judge command line of docs/verl.md, as Hydra overrides."""
    text = (ROOT / "docs" / "verl.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n# The frozen judge.*?\n```", text, re.DOTALL)
    assert block is not None, "docs/verl.md lost its frozen-judge command line"
    overrides = re.findall(r"^\s+(\+?[a-z_.0-9]+=\S+)", block.group(0), re.MULTILINE)
    return [o.replace("/abs/path/graders.yaml", str(graders)) for o in overrides]


def test_the_documented_frozen_judge_command_line(
    judge_server: JudgeServerProcess, hosted_yaml: Path
) -> None:
    overrides = documented_overrides(hosted_yaml)
    assert "reward.reward_model.enable=True" in overrides
    assert "reward.reward_model.enable_resource_pool=True" in overrides  # scores on the streaming path
    cfg = trainer_config([o.replace("Qwen/Qwen3-8B", "test-judge") for o in overrides])
    address = router_address(judge_server)
    manager = load_reward_manager(cfg, TOKENIZER, reward_router_address=address, reward_model_tokenizer=None)
    assert isinstance(manager, OpenJudgeRewardManager) and manager.scorer is not None
    grader = manager.scorer.runner.grader_configs["quality"].grader
    assert isinstance(grader, LLMGrader)
    assert getattr(grader.model, "base_url", None) == f"http://{address}/v1"
    assert grader.model.model_name == "test-judge"  # reward.reward_model.model_path
    out = asyncio.run(manager.run_single(make_batch(TOKENIZER, FAULT_PROMPTS[:1])[0:1]))
    assert out["reward_extra_info"]["openjudge/quality"] == 3.0 and out["reward_score"] == 0.5


def test_verls_naive_manager_passes_the_router_to_compute_score(
    judge_server: JudgeServerProcess, hosted_yaml: Path
) -> None:
    class RewardModelTokenizer:
        name_or_path = "test-judge"

    out = asyncio.run(
        compute_score(
            "demo",
            "answer 4",
            "4",
            {"raw_prompt": [{"role": "user", "content": "what is 2+2 ?"}]},
            openjudge={"config": str(hosted_yaml)},
            reward_router_address=router_address(judge_server),
            reward_model_tokenizer=RewardModelTokenizer(),
        )
    )
    assert out["openjudge/quality"] == 3.0 and out["score"] == 0.5


def test_kind_verl_without_a_verl_reward_model_says_what_to_set(hosted_yaml: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"providers\.judge: kind: verl .* reward\.reward_model\.enable=True"
    ):
        OpenJudgeRewardManager(None, TOKENIZER, openjudge={"config": str(hosted_yaml)})


def test_kind_verl_outside_verl_is_a_clear_config_error(hosted_yaml: Path) -> None:
    from openjudge.config import load_config
    from openjudge.config._build import build_job

    with pytest.raises(ConfigError, match=r"providers\.judge: kind 'verl' is the judge VERL serves"):
        build_job(load_config(hosted_yaml), source=str(hosted_yaml))


def test_a_reward_model_without_a_custom_function_would_bypass_the_manager(graders_yaml: Path) -> None:
    cfg = trainer_config(
        [
            "reward.reward_model.enable=True",
            "reward.reward_model.model_path=test-judge",
            "reward.reward_manager.name=openjudge",
            f"+reward.openjudge.config={graders_yaml}",
        ]
    )
    with pytest.raises(
        SettingsError,
        match=r"compute_score_disrm.*reward\.custom_reward_function\.path=pkg://openjudge\.integrations\.verl",
    ):
        load_reward_manager(cfg, TOKENIZER, reward_router_address="127.0.0.1:1", reward_model_tokenizer=None)


@contextmanager
def running_router(upstream: str) -> Iterator[str]:
    """VERL's own router (``NaiveRouter``, its FastAPI app under uvicorn) in front of ``upstream``."""
    import threading
    import time

    import uvicorn
    from verl.experimental.reward_loop.router.naive_router import NaiveRouter

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    router = NaiveRouter(worker_urls=[upstream], verbose=False, retry_delay=0.0)
    server = uvicorn.Server(uvicorn.Config(router.app, host="127.0.0.1", port=port, log_level="critical"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started, "VERL's router did not start"
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


ROUTED_YAML = HOSTED_YAML.replace("max_retries: 0", "max_retries: 2")


def routed_grader(router: str, tmp_path: Path) -> LLMGrader:
    """The ``quality`` grader of a reward worker whose ``kind: verl`` judge sits behind ``router``."""
    graders = tmp_path / "graders.yaml"
    graders.write_text(ROUTED_YAML, encoding="utf-8")
    manager = OpenJudgeRewardManager(
        trainer_config(["reward.reward_model.model_path=test-judge"]),
        TOKENIZER,
        reward_router_address=router,
        openjudge={"config": str(graders), "on_failure": "fallback", "fallback_score": 0.0},
    )
    assert manager.scorer is not None
    grader = manager.scorer.runner.grader_configs["quality"].grader
    assert isinstance(grader, LLMGrader)
    return grader


def test_a_request_the_judge_refuses_behind_vERL_s_router_is_final_and_no_outage(
    judge_server: JudgeServerProcess, tmp_path: Path
) -> None:
    from openjudge.integrations.scoring._guard import REFUSED_MARK, is_outage
    from openjudge.results import GraderError

    with running_router(judge_server.base_url.removesuffix("/v1")) as router:
        grader = routed_grader(router, tmp_path)
        judge_server.reset_stats(faults=True)
        refused = asyncio.run(grader.aevaluate(question="what is 2+2 ?", answer="answer 4 #oj:status=400"))
        stats = judge_server.stats()
    assert isinstance(refused, GraderError)  # e.g. a prompt longer than the judge's context
    assert "HTTP 500" in refused.message and REFUSED_MARK in refused.message
    assert stats.by_outcome.get("400") == 1 and stats.chat_requests == 2  # once, and the probe: not retried
    assert not is_outage(refused)
    with socket.socket() as sock:  # a judge that is down: nothing listens there
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with running_router(dead) as router:
        down = asyncio.run(routed_grader(router, tmp_path).aevaluate(question="q", answer="a"))
    assert isinstance(down, GraderError) and REFUSED_MARK not in down.message and is_outage(down)
