"""What a failed completion becomes in TRL: groups by whole prompt, drop, neutral, fallback, TRL's version."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import pytest

from openjudge.errors import SettingsError
from openjudge.integrations.scoring import FallbackPolicy
from openjudge.integrations.trl import OpenJudgeReward, OpenJudgeRewards, _rewards, _version
from openjudge.integrations.trl._columns import Column, Groups, prompt_groups, reward_column
from openjudge.integrations.trl._samples import TRLText
from tests.integrations.trl.test_rewards import SlowJudge, make_runner

SYSTEM_A = [{"role": "system", "content": "Answer in words."}, {"role": "user", "content": "2+2?"}]
SYSTEM_B = [{"role": "system", "content": "Answer in digits."}, {"role": "user", "content": "2+2?"}]


async def call(
    func: OpenJudgeReward, prompts: Sequence[TRLText], completions: list[str]
) -> list[float | None]:
    n = len(completions)
    return await func(prompts=prompts, completions=completions, completion_ids=[[1]] * n, answer=["4"] * n)


def test_a_group_is_a_run_of_one_whole_prompt() -> None:
    # Two conversations that end with the same question are two prompts (their system messages differ).
    groups = prompt_groups([SYSTEM_A, SYSTEM_A, SYSTEM_B, SYSTEM_B, "2+2?", "2+2?"], batch_is_whole=True)
    assert groups == Groups(index=(0, 0, 1, 1, 2, 2), whole=(True, True, True))
    # With several training processes, the first and last run of a slice may continue elsewhere.
    split = prompt_groups(["a", "b", "b", "c", "c", "d"], batch_is_whole=False)
    assert split == Groups(index=(0, 1, 1, 2, 2, 3), whole=(False, True, True, False))
    assert prompt_groups([], batch_is_whole=True) == Groups((), ())


def test_reward_column_under_each_policy() -> None:
    # Two groups of three; in group 0 the second completion failed (its own value, 0.2, is not a judgement
    # of it: another of its graders failed); in group 1 every completion failed.
    column = Column(values=(0.9, 0.2, 0.3, None, None, 0.5), failed=(False, True, False, True, True, True))
    whole = Groups(index=(0, 0, 0, 1, 1, 1), whole=(True, True))
    drop = FallbackPolicy(on_failure="drop")
    assert reward_column(column, whole, drop) == ([0.9, None, 0.3, None, None, None], 0)
    neutral = FallbackPolicy(on_failure="neutral")
    rewards, unknown = reward_column(column, whole, neutral)
    assert rewards == [0.9, pytest.approx(0.6), 0.3, 0.0, 0.0, 0.0] and unknown == 0
    # Group 1 may continue on another process: with none of it scored here, its mean is unknown.
    split = Groups(index=whole.index, whole=(True, False))
    assert reward_column(column, split, neutral) == ([0.9, pytest.approx(0.6), 0.3, None, None, None], 3)
    fallback = FallbackPolicy(on_failure="fallback", fallback_score=-1.0)
    assert reward_column(column, whole, fallback) == ([0.9, 0.2, 0.3, -1.0, -1.0, 0.5], 0)


@pytest.mark.anyio
async def test_neutral_gives_a_failed_completion_its_groups_mean_in_every_column() -> None:
    rewards = OpenJudgeRewards(make_runner(SlowJudge()), on_failure="neutral")
    correct, helpful = rewards.per_grader()
    prompts = [SYSTEM_A] * 3 + [SYSTEM_B] * 3
    completions = ["4 score=5", "5 score=1", "4 FAIL", "4 score=3", "4 FAIL", "5 FAIL"]
    by_correct, by_helpful = await asyncio.gather(
        call(correct, prompts, completions), call(helpful, prompts, completions)
    )
    # Group A: the failed third completion gets the mean of the other two in each column, so its
    # weighted sum is the group's mean whatever reward_weights are: zero advantage.
    assert by_correct[:3] == [1.0, 0.0, 0.5]
    assert by_helpful[:3] == [1.0, 0.0, 0.5]
    # Group B (not merged with A although its last user message is the same): one scored member.
    assert by_correct[3:] == [1.0, 1.0, 1.0]
    assert by_helpful[3:] == [0.5, 0.5, 0.5]


def test_drop_is_refused_where_trl_would_train_it_as_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    assert [_version.drops_unscorable(v) for v in ("0.27.2", "1.5.1", "1.6.0.dev0", "1.6.0rc1")] == [
        False
    ] * 4
    assert [_version.drops_unscorable(v) for v in ("1.6.0", "1.6", "1.6.0.post1", "1.16.0", "2.0.0")] == [
        True
    ] * 5
    monkeypatch.setattr(_version, "installed_trl", lambda: "1.5.1")
    with pytest.raises(SettingsError, match=r"TRL 1\.5\.1 turns a completion whose every reward function"):
        OpenJudgeRewards(make_runner(SlowJudge()))  # the default is drop
    with pytest.raises(SettingsError, match=r"on_failure='neutral'"):
        OpenJudgeRewards(make_runner(SlowJudge()), on_failure="drop")
    assert OpenJudgeRewards(make_runner(SlowJudge()), on_failure="neutral").options.on_failure == "neutral"
    assert OpenJudgeRewards(make_runner(SlowJudge()), fallback_score=0.0).options.on_failure == "fallback"
    monkeypatch.setattr(_version, "installed_trl", lambda: "1.6.0")
    assert OpenJudgeRewards(make_runner(SlowJudge())).options.on_failure == "drop"
    monkeypatch.setattr(_version, "installed_trl", lambda: None)  # no TRL: nothing to check
    assert OpenJudgeRewards(make_runner(SlowJudge())).options.on_failure == "drop"


@pytest.mark.anyio
async def test_an_unknown_neutral_value_is_reported_where_old_trl_trains_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_version, "installed_trl", lambda: "1.2.0")
    monkeypatch.setattr(_rewards, "process_count", lambda: 2)  # the batch is this process's slice
    helpful = OpenJudgeRewards(make_runner(SlowJudge()), on_failure="neutral").grader("helpful")
    with caplog.at_level(logging.WARNING, logger=_rewards.__name__):
        values = await call(
            helpful, ["a", "a", "b", "b", "c"], ["4 FAIL", "4 FAIL", "4 score=5", "4 FAIL", "4 FAIL"]
        )
    # "a" and "c" may continue on a neighbouring process and had nothing scored here; "b" is whole.
    assert values == [None, None, 1.0, 1.0, None]
    assert "3 failed completions (3 so far) have no known group mean" in caplog.text
    assert "TRL 1.2.0 trains as a reward of 0" in caplog.text
