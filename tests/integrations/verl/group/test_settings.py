from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from omegaconf import OmegaConf

from openjudge.config import ConfigError
from openjudge.integrations.verl._settings import SettingsError
from openjudge.integrations.verl.group import GroupSettings
from openjudge.integrations.verl.group._settings import read_group_settings
from openjudge.integrations.verl.group._stage import build_stage
from openjudge.integrations.verl.group.members import group_sample
from openjudge.integrations.verl.samples import sample_from_agent_output
from tests.integrations.verl.group.scripted import member


def test_defaults_and_the_fallback_policy() -> None:
    assert read_group_settings(None) == GroupSettings()
    assert GroupSettings().on_member_failure == "neutral" and GroupSettings().wait_timeout_s == 600.0
    assert GroupSettings().on_failure == "drop"
    node = OmegaConf.create(
        {"config": "/g.yaml", "on_failure": "fallback", "fallback_score": -1, "pointwise": False}
    )
    settings = read_group_settings(node)
    assert (settings.on_failure, settings.fallback_score, settings.pointwise) == ("fallback", -1.0, False)


def test_on_failure_inherits_the_per_sample_policy() -> None:
    per_sample = {"config": "/p.yaml", "on_failure": "fallback", "fallback_score": 0.0}
    inherited = read_group_settings({}, per_sample)
    assert (inherited.on_failure, inherited.fallback_score) == ("fallback", 0.0)
    assert read_group_settings({"on_failure": "drop"}, per_sample).on_failure == "drop"
    assert read_group_settings({}, OmegaConf.create({"config": "/p.yaml"})).on_failure == "drop"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"wait_timeout_s": 0}, "reward.openjudge_group.wait_timeout_s: Input should be greater than 0"),
        ({"on_member_failure": "zero"}, "reward.openjudge_group.on_member_failure"),
        (
            {"on_failure": "skip"},
            "reward.openjudge_group.on_failure: Input should be 'drop', 'neutral' or 'fallback'",
        ),
        (
            {"on_failure": "fallback"},
            "reward.openjudge_group.on_failure=fallback needs an explicit reward.openjudge_group.fallback_score",
        ),
        (
            {"fallback_score": 0.0},
            "reward.openjudge_group.fallback_score is used only with reward.openjudge_group.on_failure=fallback",
        ),
        ({"colour": "red"}, "reward.openjudge_group.colour: unknown option (options: aggregate, config"),
        (
            {"on_failure": "fallback", "fallback_score": float("nan")},
            "fallback_score must be a finite number",
        ),
        ("config.yaml", "must be a mapping of options, got str"),
    ],
)
def test_invalid_options_name_the_key(options: object, message: str) -> None:
    with pytest.raises(SettingsError, match=re.escape(message)):
        read_group_settings(options)


def test_stage_needs_something_to_judge_with() -> None:
    with pytest.raises(SettingsError, match=r"pass \+reward.openjudge_group.config=/abs/path/group.yaml"):
        build_stage(OmegaConf.create({"reward": {}}))


def test_stage_refuses_group_graders_that_reuse_the_reward_loops_names(tmp_path: Path) -> None:
    pointwise, group = tmp_path / "pointwise.yaml", tmp_path / "group.yaml"
    pointwise.write_text(
        "graders:\n  rank: {type: string_match, mapper: {response: response, reference: ground_truth}}\n"
    )
    group.write_text(
        "providers:\n  judge: {kind: openai, model: m, base_url: 'http://127.0.0.1:9/v1', api_key: k}\n"
        "graders:\n  rank: {type: listwise_ranking, provider: judge, mapper: {query: query, responses: responses}}\n"
    )
    config: dict[str, dict[str, dict[str, object]]] = {
        "reward": {"openjudge": {"config": str(pointwise)}, "openjudge_group": {"config": str(group)}}
    }
    with pytest.raises(
        ConfigError,
        match=rf"{re.escape(str(group))}: grader 'rank' writes openjudge/rank, which the reward loop",
    ):
        build_stage(OmegaConf.create(config))
    config["reward"]["openjudge_group"]["pointwise"] = False  # no reward loop: no clash
    assert build_stage(OmegaConf.create(config)).judge.grader_names == ("rank",)  # type: ignore[attr-defined]


def test_stage_refuses_the_judge_vERL_hosts_at_start(tmp_path: Path) -> None:
    """VERL gives its router's address (a random port) to reward workers only, never to the
    agent-loop workers that judge groups: refused in the driver, with what to do instead."""
    group = tmp_path / "group.yaml"
    group.write_text(
        "providers:\n  judge: {kind: verl}\n"
        "graders:\n  rank: {type: listwise_ranking, provider: judge, mapper: {query: query, responses: responses}}\n"
    )
    config = OmegaConf.create({"reward": {"openjudge_group": {"config": str(group), "pointwise": False}}})
    refused = r"providers judge: kind: verl \(the judge VERL hosts\) cannot judge groups"
    with pytest.raises(SettingsError, match=refused):
        build_stage(config)
    # As VERL's V1 task runner builds the manager it is named by (before any agent-loop worker starts).
    from verl.utils.import_utils import load_class_from_fqn

    from tests.integrations.verl.helpers import trainer_config

    fqn = "openjudge.integrations.verl.group.OpenJudgeAgentLoopManager"
    cfg = trainer_config(
        [
            f"+actor_rollout_ref.rollout.agent.agent_loop_manager_class={fqn}",
            f"+reward.openjudge_group.config={group}",
        ]
    )
    named = cfg.actor_rollout_ref.rollout.agent.agent_loop_manager_class
    manager_cls: Any = load_class_from_fqn(named, "AgentLoopManager")  # as TaskRunnerV1 loads it
    with pytest.raises(SettingsError, match=refused):
        manager_cls.create(config=cfg, llm_client=None, teacher_client=None, reward_loop_worker_handles=[])


@dataclass
class Output:
    """The fields of VERL's AgentLoopOutput the group stage reads."""

    prompt_ids: list[int]
    response_ids: list[int]
    extra_fields: dict[str, object] = field(default_factory=dict)
    num_turns: int = 2


def test_the_shared_row_builder_reads_what_the_agent_loop_produced() -> None:
    class Words:
        def decode(self, token_ids: list[int], skip_special_tokens: bool = True) -> str:
            return " ".join(f"w{t}" for t in token_ids)

    raw_prompt = np.array([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}])
    fields = {
        "raw_prompt": raw_prompt,
        "reward_model": {"ground_truth": "4"},
        "data_source": np.str_("gsm8k"),
        "extra_info": {"split": "train"},
        "uid": "u7",
        "messages": [{"role": "user", "content": "a dataset column, not the trajectory"}],
    }
    output = Output([1, 2], [3], {"turn_scores": [], "reward_extra_info": {"openjudge/x": 1.0}})
    s = asyncio.run(sample_from_agent_output(output, fields, Words())).grader_sample()
    assert s["prompt"] == "2+2?" and s["prompt_text"] == "w1 w2" and s["response"] == "w3"
    assert s["messages"] == [*raw_prompt.tolist(), {"role": "assistant", "content": "w3"}]
    assert (s["ground_truth"], s["data_source"], s["uid"]) == ("4", "gsm8k", "u7")
    assert s["num_turns"] == 2 and s["extra_info"] == {"split": "train"}
    assert (s["prompt_length"], s["response_length"], s["turn_scores"]) == (2, 1, [])
    assert "agent_fields" not in s  # the pointwise pass's reward_extra_info is not an agent field
    tools = [{"role": "user", "content": "2+2?"}, {"role": "tool", "content": "4"}]
    other_loop = Output([1], [3], {"messages": tools}, num_turns=3)
    assert asyncio.run(sample_from_agent_output(other_loop, fields, Words())).messages == tools
    ours = Output([1], [3], {"openjudge/messages": tools, "messages": []})  # openjudge_tool_agent's export
    assert asyncio.run(sample_from_agent_output(ours, fields, Words())).messages == tools


def test_group_sample_shares_the_prompt_and_lists_responses() -> None:
    shared = group_sample([member(0, "a"), member(1, "b")])
    assert shared["query"] == "what is 2+2 ?" and shared["responses"] == ["a", "b"]
    assert shared["ground_truth"] == "4" and "response" not in shared and len(shared["members"]) == 2  # type: ignore[arg-type]
