"""One grader config, two providers: switching is a config change, the scores are identical."""

from __future__ import annotations

import warnings

import pytest

from openjudge.config._build import build_job
from openjudge.config._loader import ConfigError, parse_config
from openjudge.results import GraderScore
from openjudge.testing.judge_server import JudgeServerProcess
from tests._fixtures.extras import need_litellm

pytestmark = pytest.mark.anyio

CONFIG = """
providers:
  judge:
    kind: {kind}
    model: {model}
    base_url: {base_url}
    api_key: sk-test
graders:
  quality:
    type: llm
    provider: judge
    params: {{template: "Rate: {{answer}}", score_range: [1, 5]}}
cache: {{enabled: false}}
"""


async def scores_with(kind: str, model: str, base_url: str) -> list[tuple[float, str]]:
    config = parse_config(CONFIG.format(kind=kind, model=model, base_url=base_url))
    job = build_job(config)
    data = [{"answer": f"answer {i} #oj:score={1 + i % 5}"} for i in range(10)]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Item 'summary' on TypedDict", category=UserWarning)
        result = await job.runner.arun(data)
    return [(r.score, r.reason) for r in result["quality"] if isinstance(r, GraderScore)]


async def test_openai_and_litellm_hosted_vllm_give_identical_scores(judge_server: JudgeServerProcess) -> None:
    need_litellm()
    via_openai = await scores_with("openai", "judge", judge_server.base_url)
    via_litellm = await scores_with("litellm", "hosted_vllm/judge", judge_server.base_url)
    via_vllm = await scores_with("vllm", "judge", judge_server.base_url)
    assert [s for s, _ in via_openai] == [1.0, 2.0, 3.0, 4.0, 5.0] * 2
    assert via_litellm == via_openai
    assert via_vllm == via_openai


def test_api_version_only_for_azure_and_litellm() -> None:
    text = CONFIG.format(kind="openai", model="m", base_url="http://127.0.0.1:9/v1").replace(
        "api_key: sk-test", "api_key: sk-test\n    api_version: 2024-10-21"
    )
    with pytest.raises(ConfigError) as caught:
        parse_config(text, source="job.yaml")
    assert caught.value.problems == [
        "job.yaml:8: providers.judge.api_version: applies to kind 'azure' or 'litellm', not 'openai'"
    ]
