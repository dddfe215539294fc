"""The streaming reward path as VERL 0.9 runs it: VERL's agent loops build every row.

``AgentLoopWorker`` (V0) and ``AgentLoopWorkerTQ`` (V1) run their own code on CPU with
a scripted rollout server; each finished trajectory goes to VERL's ``RewardLoopWorker``
(here in process, so the test can see what the graders received), which calls our
manager. ``test_ray.py`` runs the same path through Ray actors.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from verl import DataProto
from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

from openjudge.integrations.scoring._guard import SampleFailed
from openjudge.integrations.scoring._scorer import Placement, ScoredSample
from openjudge.integrations.verl._reward_loop import OpenJudgeRewardManager
from openjudge.testing.judge_server import JudgeServerProcess
from tests.integrations.verl import fake_tq
from tests.integrations.verl.agent_rig import (
    LocalRewardHandle,
    Question,
    ScriptedServer,
    agent_config,
    agent_loop_worker,
    dataset_batch,
    v1_agent_loop_worker,
    weather_script,
)

pytestmark = pytest.mark.slow  # real VERL managers and trainers (seconds per test)

AGENT_GRADERS = """\
version: 1
providers:
  judge:
    kind: openai
    model: test-judge
    base_url: {base_url}
    api_key: sk-test
    timeout_s: 2
    max_retries: 0
graders:
  correct:
    type: string_match
    params: {{match_mode: contains}}
    mapper: {{response: response, reference: ground_truth}}
  loops:
    type: action_loop_detection
    mapper: {{messages: messages}}
  quality:
    type: llm
    provider: judge
    params:
      template: "Question: {{question}}\\nAnswer: {{answer}}\\nScore 1 to 5."
      score_range: [1, 5]
    mapper: {{question: prompt, answer: response}}
aggregators:
  - type: weighted_mean
    name: total
    weights: {{correct: 1, loops: 1, quality: 1}}
"""

PARIS = Question("Be brief.", "What is the weather in Paris?", "sunny")
PARIS_TWICE = Question("Be brief.", "Check the weather in Paris twice.", "sunny")
BROKEN = Question("Be brief.", "Weather in Lyon? #oj:status=503", "sunny")  # the judge fails on it


@pytest.fixture(scope="module")
def agent_yaml(judge_server: JudgeServerProcess, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("agent_graders") / "graders.yaml"
    path.write_text(AGENT_GRADERS.format(base_url=judge_server.base_url), encoding="utf-8")
    return path


class Recorded:
    """A reward worker in this process, and every sample its graders received."""

    def __init__(self, worker: RewardLoopWorker) -> None:
        self.worker = worker
        self.handle = LocalRewardHandle(worker)
        self.samples: list[dict[str, Any]] = []
        manager = worker.reward_manager
        assert isinstance(manager, OpenJudgeRewardManager) and manager.scorer is not None
        scorer = manager.scorer
        original = scorer.score

        async def score(sample: Mapping[str, Any], placement: Placement | None = None) -> ScoredSample:
            self.samples.append(dict(sample))
            return await original(sample, placement)

        scorer.score = score  # type: ignore[method-assign]  # record what the graders get


def reward_worker(model_dir: Path, graders: Path, *policy: str) -> Recorded:
    config = agent_config(
        model_dir,
        [
            "reward.reward_manager.name=openjudge",
            f"+reward.openjudge.config={graders}",
            *policy,
        ],
    )
    return Recorded(RewardLoopWorker(config))


def agent_worker(model_dir: Path, reward: Recorded, agent: str, *overrides: str) -> Any:
    config = agent_config(
        model_dir, [f"actor_rollout_ref.rollout.agent.default_agent_loop={agent}", *overrides]
    )
    return agent_loop_worker(config, ScriptedServer(weather_script), [reward.handle])


@pytest.fixture(scope="module")
def fallback(model_dir: Path, agent_yaml: Path) -> Recorded:
    return reward_worker(
        model_dir, agent_yaml, "+reward.openjudge.on_failure=fallback", "+reward.openjudge.fallback_score=-1"
    )


def test_single_turn_rows_give_the_question_not_the_chat_template(
    model_dir: Path, fallback: Recorded
) -> None:
    fallback.samples.clear()
    worker = agent_worker(model_dir, fallback, "single_turn_agent")
    out = asyncio.run(worker.generate_sequences(dataset_batch([PARIS])))
    [sample] = fallback.samples
    assert sample["prompt"] == "What is the weather in Paris?"  # the last user turn, as a judge needs it
    assert (
        sample["prompt_text"]
        == "<system>Be brief.</system>\n<user>What is the weather in Paris?</user>\n<assistant>"
    )
    assert sample["prompt_messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is the weather in Paris?"},
    ]
    response = sample["response"]
    assert response.startswith("Let me check.<tool_call>")  # single turn: the call is just text
    assert sample["messages"] == [*sample["prompt_messages"], {"role": "assistant", "content": response}]
    assert sample["prompt_length"] == len(sample["prompt_text"].encode())  # one token per byte
    assert sample["response_length"] == len(response.encode()) + 1  # and the stop token
    assert sample["ground_truth"] == "sunny" and sample["data_source"] == "weather"
    assert sample["uid"] == "uid-0" and sample["extra_info"] == {"index": 0}
    # VERL put the reward on the last response token and our extras in the batch.
    rm = out.batch["rm_scores"]
    p = out.batch["prompts"].shape[1]
    last = int(out.batch["attention_mask"][0, p:].sum()) - 1
    assert float(rm[0, last]) == pytest.approx((0.0 + 1.0 + 0.5) / 3)  # "sunny" is not in the reply
    assert out.non_tensor_batch["openjudge/reward"].tolist() == [pytest.approx(0.5)]
    assert "openjudge/reward" in out.meta_info["reward_extra_keys"]


def test_tool_agent_trajectories_reach_the_graders(model_dir: Path, fallback: Recorded) -> None:
    fallback.samples.clear()
    worker = agent_worker(model_dir, fallback, "openjudge_tool_agent")
    out = asyncio.run(worker.generate_sequences(dataset_batch([PARIS, PARIS_TWICE])))
    once, twice = sorted(fallback.samples, key=lambda s: str(s["uid"]))
    call = {"type": "function", "function": {"name": "weather", "arguments": {"city": "Paris"}}}
    assert once["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": "Let me check.<eos>", "tool_calls": [call]},
        {"role": "tool", "content": "Paris: sunny, 22C"},
        {"role": "assistant", "content": "It is sunny there.<eos>"},
    ]
    roles = [m["role"] for m in twice["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert twice["messages"][2]["tool_calls"] == twice["messages"][4]["tool_calls"] == [call]
    assert once["prompt"] == "What is the weather in Paris?"
    assert once["num_turns"] == 4 and once["turn_scores"] == [] and once["tool_rewards"] == [0.0]
    assert "Paris: sunny, 22C" in once["response"]  # the tool output is part of the response tokens
    # The rule graders scored the real tool calls: one call is no loop, the same call twice is.
    loops = out.non_tensor_batch["openjudge/loops"].tolist()
    assert loops == [1.0, 0.0]
    assert out.non_tensor_batch["openjudge/correct"].tolist() == [1.0, 1.0]


def test_a_failed_judge_is_a_flagged_fallback_and_only_floats(model_dir: Path, fallback: Recorded) -> None:
    worker = agent_worker(model_dir, fallback, "single_turn_agent")
    out = asyncio.run(worker.generate_sequences(dataset_batch([PARIS, BROKEN])))
    extra = out.non_tensor_batch
    assert extra["openjudge/quality/error_kind"].tolist() == ["", "provider_error"]
    assert extra["openjudge/quality"].tolist() == [3.0, 0.0]
    assert extra["openjudge/quality/error"].tolist() == [0.0, 1.0]
    assert extra["openjudge/failed"].tolist() == [0.0, 1.0]
    assert extra["openjudge/reward"].tolist() == [pytest.approx(0.5), -1.0]
    for key in out.meta_info["reward_extra_keys"]:
        if not key.endswith("/error_kind"):
            assert extra[key].dtype == np.float64, key  # never None, never object


def test_a_v0_step_trains_around_a_failed_trajectory(model_dir: Path, agent_yaml: Path) -> None:
    v0 = ("trainer.use_v1=false", "actor_rollout_ref.rollout.n=2")
    default = reward_worker(model_dir, agent_yaml, *v0)  # on_failure=drop: V0 cannot drop, so neutral
    worker = agent_worker(model_dir, default, "single_turn_agent", *v0)
    out = asyncio.run(worker.generate_sequences(dataset_batch([PARIS, BROKEN], n=2)))  # no exception
    extra = out.non_tensor_batch
    assert extra["openjudge/failed"].tolist() == [0.0, 0.0, 1.0, 1.0]
    assert extra["openjudge/quality/error_kind"].tolist() == ["", "", "provider_error", "provider_error"]
    p = out.batch["prompts"].shape[1]
    last = out.batch["attention_mask"][:, p:].sum(-1) - 1
    rewards = [float(out.batch["rm_scores"][i, int(last[i])]) for i in range(4)]
    assert rewards[2:] == [0.0, 0.0]  # a group where every member failed: equal rewards, no signal


def test_drop_on_v1_fails_the_session(model_dir: Path, agent_yaml: Path) -> None:
    dropping = reward_worker(model_dir, agent_yaml)  # V1 (VERL 0.9's default): VERL drops the trajectory
    worker = agent_worker(model_dir, dropping, "single_turn_agent")
    with pytest.raises(SampleFailed, match=r"quality: provider_error"):
        asyncio.run(worker.generate_sequences(dataset_batch([PARIS, BROKEN])))


def test_several_outputs_of_one_trajectory_are_read_by_their_lengths(
    model_dir: Path, fallback: Recorded
) -> None:
    from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput

    fallback.samples.clear()
    worker = agent_worker(model_dir, fallback, "single_turn_agent")
    tok = worker.tokenizer
    first = AgentLoopOutput(
        prompt_ids=tok.encode("<user>a long first prompt</user>"),
        response_ids=tok.encode("x"),
        response_mask=[1],
        metrics=AgentLoopMetrics(),
    )
    last = AgentLoopOutput(
        prompt_ids=tok.encode("<user>hi</user>"),
        response_ids=tok.encode("the sunny answer"),
        response_mask=[1] * 16,
        metrics=AgentLoopMetrics(),
    )
    raw = [{"role": "user", "content": "hi"}]
    kwargs = {
        "raw_prompt": raw,
        "uid": "u",
        "data_source": "weather",
        "reward_model": {"ground_truth": "sunny"},
    }
    asyncio.run(worker._compute_score([first, last], kwargs=kwargs))  # VERL pads the two rows to one width
    [sample] = fallback.samples
    assert sample["prompt_text"] == "<user>hi</user>" and sample["response"] == "the sunny answer"
    assert (sample["prompt_length"], sample["response_length"]) == (15, 16)
    assert last.reward_score == pytest.approx((1.0 + 1.0 + 0.5) / 3)


@pytest.fixture
def transfer_queue() -> Iterator[fake_tq.Store]:
    with fake_tq.installed() as store:
        yield store


def run_v1_prompt(worker: Any, question: Question, n: int) -> None:
    """What ``AgentLoopWorkerTQ.generate_sequences`` does for one prompt of the batch."""
    from verl.experimental.agent_loop.agent_loop import get_trajectory_info

    batch = dataset_batch([question])
    prompt = {k: v[0] for k, v in batch.non_tensor_batch.items()}
    prompt.update({"agent_name": "single_turn_agent", "global_steps": 1, "__rollout_n__": n})
    [trajectory] = asyncio.run(get_trajectory_info(1, [0], False))  # type: ignore[no-untyped-call]  # VERL leaves it unannotated
    sampling = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": False}
    asyncio.run(worker._run_prompt(prompt, sampling, trajectory=trajectory))


def v1_worker(model_dir: Path, reward: Recorded) -> Any:
    return v1_agent_loop_worker(agent_config(model_dir), ScriptedServer(weather_script), [reward.handle])


def test_v1_stores_scored_trajectories(
    transfer_queue: fake_tq.Store, model_dir: Path, fallback: Recorded
) -> None:
    run_v1_prompt(v1_worker(model_dir, fallback), PARIS, n=2)
    assert transfer_queue.tags["train"]["uid-0"]["status"] == "finished"
    stored = transfer_queue.values["train"]
    assert sorted(stored) == ["uid-0_0_0", "uid-0_1_0"]
    for value in stored.values():
        info = value["extra_fields"]["reward_extra_info"]
        assert info["openjudge/reward"] == pytest.approx(0.5) and info["openjudge/failed"] == 0.0
        assert float(value["rm_scores"][-1]) == pytest.approx(0.5)


def test_v1_drop_leaves_the_trajectory_out(
    transfer_queue: fake_tq.Store, model_dir: Path, agent_yaml: Path
) -> None:
    dropping = reward_worker(model_dir, agent_yaml)
    run_v1_prompt(v1_worker(model_dir, dropping), BROKEN, n=2)
    # Both sessions failed to score: the group is marked failed and nothing is stored to train on.
    assert transfer_queue.tags["train"]["uid-0"]["status"] == "failure"
    assert transfer_queue.values.get("train", {}) == {}


def test_verl_hands_rows_of_the_v1_colocated_shape(model_dir: Path, fallback: Recorded) -> None:
    """``_compute_reward_colocate`` sends right-padded prompts and only ``raw_prompt``."""
    import torch

    fallback.samples.clear()
    tok = fallback.worker.input_tokenizer
    prompts = [tok.encode("<user>hi</user>"), tok.encode("<user>a longer one</user>")]
    responses = [tok.encode("sunny"), tok.encode("no")]
    width_p, width_r = max(map(len, prompts)), max(map(len, responses))

    def right(ids: list[int], width: int) -> list[int]:
        return ids + [0] * (width - len(ids))

    raw = np.empty(2, dtype=object)
    raw[:] = [[{"role": "user", "content": "hi"}], [{"role": "user", "content": "a longer one"}]]
    mask = [
        [1] * len(p) + [0] * (width_p - len(p)) + [1] * len(r) + [0] * (width_r - len(r))
        for p, r in zip(prompts, responses, strict=True)
    ]
    data = DataProto.from_dict(
        tensors={
            "prompts": torch.tensor([right(p, width_p) for p in prompts]),
            "responses": torch.tensor([right(r, width_r) for r in responses]),
            "attention_mask": torch.tensor(mask),
        },
        non_tensors={"raw_prompt": raw},
    )
    outs = asyncio.run(fallback.worker.compute_score_batch(data))
    texts = [(s["prompt_text"], s["response"], s["prompt"]) for s in fallback.samples]
    assert texts == [("<user>hi</user>", "sunny", "hi"), ("<user>a longer one</user>", "no", "a longer one")]
    assert [o["reward_extra_info"]["openjudge/correct/error_kind"] for o in outs] == ["invalid_input"] * 2
