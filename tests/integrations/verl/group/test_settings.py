from __future__ import annotations

import re

import numpy as np
import pytest
from omegaconf import OmegaConf

from integrations.verl.group import GroupSettings
from integrations.verl.group.members import build_sample, group_sample
from integrations.verl.group.settings import read_group_settings
from integrations.verl.group.stage import build_stage
from integrations.verl.settings import SettingsError
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
        ({"on_failure": "skip"}, "reward.openjudge_group.on_failure: Input should be 'drop' or 'fallback'"),
        ({"on_failure": "fallback"}, "on_failure=fallback needs an explicit fallback_score"),
        ({"fallback_score": 0.0}, "fallback_score is used only with on_failure=fallback"),
        ({"colour": "red"}, "reward.openjudge_group.colour: Extra inputs are not permitted"),
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


def test_build_sample_from_what_the_agent_loop_produced() -> None:
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
    }
    sample = build_sample(Words(), [1, 2], [3], fields, {"turn_scores": []}, 2)
    assert sample["prompt"] == "2+2?" and sample["prompt_text"] == "w1 w2" and sample["response"] == "w3"
    assert sample["messages"] == [*raw_prompt.tolist(), {"role": "assistant", "content": "w3"}]
    assert (sample["ground_truth"], sample["data_source"], sample["uid"]) == ("4", "gsm8k", "u7")
    assert sample["num_turns"] == 2 and sample["extra_info"] == {"split": "train"}
    tools = [{"role": "user", "content": "2+2?"}, {"role": "tool", "content": "4"}]
    assert build_sample(Words(), [1], [3], fields, {"messages": tools}, 3)["messages"] == tools


def test_group_sample_shares_the_prompt_and_lists_responses() -> None:
    shared = group_sample([member(0, "a"), member(1, "b")])
    assert shared["query"] == "what is 2+2 ?" and shared["responses"] == ["a", "b"]
    assert shared["ground_truth"] == "4" and "response" not in shared and len(shared["members"]) == 2  # type: ignore[arg-type]
