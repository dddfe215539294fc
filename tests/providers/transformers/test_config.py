"""``kind: transformers`` in job configs: ``openjudge run`` end to end, errors, provider swaps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openjudge.cli import main
from openjudge.config import ConfigError
from openjudge.config._build import build_job
from openjudge.config._loader import parse_config
from openjudge.graders.reward_model import RewardModelGrader
from openjudge.jobs._results import read_results
from openjudge.providers.transformers import TransformersChatModel, TransformersRewardModel
from openjudge.providers.vllm_reward import VLLMRewardModel
from tests.providers.transformers.helpers import direct_reward

pytestmark = pytest.mark.slow  # real (tiny) models run forward passes and generate

QUESTIONS = [
    "what is 2+2?",
    "capital of france?",
    "name a colour",
    "is water wet?",
    "say hello",
    "count to 3",
]


def write_job(tmp_path: Path, judge: Path, reward: Path) -> Path:
    config = tmp_path / "job.yaml"
    config.write_text(
        f"""\
version: 1
providers:
  judge:
    kind: transformers
    model: {judge}
    device: cpu
    max_batch_size: 4
    max_new_tokens: 16
  rm:
    kind: transformers
    model: {reward}
    device: cpu
    dtype: float32
    max_batch_size: 8
graders:
  helpful:
    type: llm
    provider: judge
    params:
      template: "Question: {{question}}\\nAnswer: {{answer}}\\nScore 1 to 5."
      score_range: [1, 5]
    mapper: {{question: prompt, answer: response}}
  expected_helpful:
    type: llm
    provider: judge
    params:
      template: "Question: {{question}}\\nAnswer: {{answer}}\\nScore 1 to 5."
      score_range: [1, 5]
      score_mode: logprobs
    mapper: {{question: prompt, answer: response}}
  reward:
    type: reward_model
    provider: rm
    params: {{score_range: [-10, 10], clip_to_range: true}}
    mapper: {{response: response, prompt: prompt}}
aggregators:
  - type: weighted_mean
    name: overall
    weights: {{helpful: 1, reward: 1}}
""",
        encoding="utf-8",
    )
    return config


def test_openjudge_run_grades_a_dataset_with_local_models(
    tmp_path: Path, judge_path: Path, reward_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_job(tmp_path, judge_path, reward_path)
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"s{i}", "prompt": q, "response": f"answer {i}"}) + "\n"
            for i, q in enumerate(QUESTIONS)
        ),
        encoding="utf-8",
    )
    out = tmp_path / "results.jsonl"
    assert (
        main(["run", str(config), "--data", str(data), "--out", str(out), "--no-progress", "--no-cache"]) == 0
    )
    records: dict[str, Any] = {str(r["id"]): r["results"] for r in read_results(out)}
    aggregates: dict[str, Any] = {str(r["id"]): r["aggregates"] for r in read_results(out)}
    assert sorted(records) == [f"s{i}" for i in range(len(QUESTIONS))]
    for i, question in enumerate(QUESTIONS):
        results = records[f"s{i}"]
        assert isinstance(results, dict)
        assert results["helpful"]["score"] == 4.0 and results["helpful"]["reason"] == "fine"
        assert 3.0 < results["expected_helpful"]["score"] < 4.0
        expected = direct_reward(reward_path, question, f"answer {i}")
        assert results["reward"]["score"] == pytest.approx(expected, abs=1e-5)
        overall = aggregates[f"s{i}"]
        assert isinstance(overall, dict)
        assert overall["overall"] == pytest.approx((0.75 + (expected + 10) / 20) / 2, abs=1e-5)
    assert f"{len(QUESTIONS)} samples graded" in capsys.readouterr().out


def test_built_providers_share_one_model_per_provider(
    tmp_path: Path, judge_path: Path, reward_path: Path
) -> None:
    config = parse_config(write_job(tmp_path, judge_path, reward_path).read_text(encoding="utf-8"))
    job = build_job(config)
    judge, rm = job.providers["judge"], job.providers["rm"]
    assert isinstance(judge, TransformersChatModel) and judge.settings.max_batch_size == 4
    graders = job.runner.grader_configs
    assert graders["helpful"].grader.model is judge is graders["expected_helpful"].grader.model  # type: ignore[attr-defined]
    reward_grader = graders["reward"].grader
    assert isinstance(reward_grader, RewardModelGrader)
    assert isinstance(reward_grader.reward_model, TransformersRewardModel)
    assert reward_grader.reward_model is rm.reward_model()  # type: ignore[attr-defined]
    assert reward_grader.reward_model.settings.dtype == "float32"
    assert job.grader_providers == {"helpful": "judge", "expected_helpful": "judge", "reward": "rm"}
    assert judge.local_model.loaded is None  # nothing loads before the first call


def test_the_reward_grader_swaps_to_vllm_by_provider() -> None:
    config = parse_config(
        """\
providers:
  rm: {kind: vllm, model: Skywork/Skywork-Reward-V2-Qwen3-0.6B, base_url: "http://127.0.0.1:9/v1"}
graders:
  reward: {type: reward_model, provider: rm}
"""
    )
    grader = build_job(config).runner.grader_configs["reward"].grader
    assert isinstance(grader, RewardModelGrader) and isinstance(grader.reward_model, VLLMRewardModel)
    assert (
        grader.reward_model.server_url == "http://127.0.0.1:9"
        and grader.reward_model.model_name == "Skywork/Skywork-Reward-V2-Qwen3-0.6B"
    )


@pytest.mark.parametrize(
    ("provider", "grader_type", "message"),
    [
        ("{kind: transformers, model: m, base_url: 'http://x/v1'}", "llm", "remove base_url and api_key"),
        (
            "{kind: transformers, model: m, structured_output: json_object}",
            "llm",
            r"takes structured_output 'json_schema' .* or 'prompt'",
        ),
    ],
)
def test_misplaced_settings_are_config_errors(provider: str, grader_type: str, message: str) -> None:
    params = "{template: '{q}'}" if grader_type == "llm" else "{}"
    config = parse_config(
        f"providers:\n  p: {provider}\ngraders:\n  g: {{type: {grader_type}, provider: p, params: {params}}}\n"
    )
    with pytest.raises(ConfigError, match=message):
        build_job(config, source="job.yaml")


def test_a_local_setting_on_another_kind_names_its_line() -> None:
    text = (
        "providers:\n  p: {kind: openai, model: m, base_url: 'http://x/v1', device: cpu}\n"
        "graders:\n  g: {type: string_match}\n"
    )
    with pytest.raises(ConfigError) as raised:
        parse_config(text, source="job.yaml")
    assert raised.value.problems == [
        "job.yaml:2: providers.p.device: applies to kind 'transformers', not 'openai'"
    ]


@pytest.mark.parametrize(
    ("line", "field"), [("max_batch_size: 0", "max_batch_size"), ("device: gpu0", "device")]
)
def test_a_bad_local_setting_names_its_line(line: str, field: str) -> None:
    with pytest.raises(ConfigError, match=rf"job.yaml:4: providers.p.{field}"):
        parse_config(
            f"providers:\n  p:\n    kind: transformers\n    {line}\n    model: m\n"
            "graders:\n  g: {type: llm, provider: p, params: {template: '{q}'}}\n",
            source="job.yaml",
        )


def test_a_reward_model_grader_needs_a_provider_that_serves_reward_models() -> None:
    graders = "graders:\n  g:\n    type: reward_model\n"
    with pytest.raises(ConfigError) as missing:
        parse_config(graders, source="job.yaml")
    assert missing.value.problems == [
        "job.yaml:2: graders.g: grader type 'reward_model' scores with a reward model and needs "
        "'provider: <name>' (a provider of kind 'transformers' (in process) or 'vllm' (its /classify endpoint))"
    ]
    with pytest.raises(ConfigError) as wrong_kind:
        parse_config(
            "providers:\n  p: {kind: openai, model: m, base_url: 'http://x/v1'}\n"
            + graders
            + "    provider: p\n",
            source="job.yaml",
        )
    assert wrong_kind.value.problems == [
        "job.yaml:6: graders.g.provider: reward_model graders need a provider of kind 'transformers' "
        "(in process) or 'vllm' (its /classify endpoint); 'p' is of kind 'openai'"
    ]
