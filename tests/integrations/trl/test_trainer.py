"""The reward functions inside a real ``GRPOTrainer`` (TRL 1.16, CPU, a tiny model built in code).

``GRPOTrainer._calculate_rewards(inputs, prompts, completions, completion_ids)`` is the
trainer's own reward step: it repeats the dataset columns per completion, awaits the async
reward functions together on its daemon event loop, and turns ``None`` into NaN.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
import torch
import trl
from datasets import Dataset  # type: ignore[import-untyped]  # no py.typed

from openjudge.integrations.trl import OpenJudgeRewards, _version
from openjudge.testing.judge_server import JudgeServerProcess
from tests.integrations.trl.helpers import make_trainer, write_graders_yaml

pytestmark = pytest.mark.slow  # a real TRL GRPOTrainer

logging_hooks_and_drop = pytest.mark.skipif(
    not _version.drops_unscorable(trl.__version__),
    reason="TRL before 1.6 has no log_metric/log_extra and trains a dropped completion as 0 (drop is "
    "refused there: test_advantages.py)",
)

PROMPT = "what is 2+2 ?"


def dataset(n_prompts: int = 2) -> Dataset:
    return Dataset.from_dict({"prompt": [PROMPT] * n_prompts, "answer": ["4"] * n_prompts})


def inputs_for(completions: list[str], extra: dict[str, object] | None = None) -> list[dict[str, object]]:
    """What the trainer hands ``_calculate_rewards``: one dataset row per completion."""
    return [{"prompt": PROMPT, "answer": "4", **(extra or {})} for _ in completions]


def rewards_of(trainer_rewards: torch.Tensor) -> list[list[float | None]]:
    return [[None if math.isnan(v) else round(v, 6) for v in row] for row in trainer_rewards.tolist()]


COMPLETIONS = [
    "the answer is 4 #oj:score=5",  # correct, judge 5 -> 1.0
    "the answer is 5",  # wrong, judge 3 (default) -> 0.5
    "4 #oj:status=503",  # correct, the judge fails (no retries): None -> NaN
    "5 #oj:score=1",  # wrong, judge 1 -> 0.0
]


@logging_hooks_and_drop
def test_per_grader_functions_in_calculate_rewards(tmp_path: Path, judge_server: JudgeServerProcess) -> None:
    rewards = OpenJudgeRewards.from_config(write_graders_yaml(tmp_path, judge_server.base_url))
    trainer = make_trainer(tmp_path / "out", rewards.per_grader(), dataset())
    assert trainer.reward_func_names == ["correct", "helpful"]  # what TRL logs as rewards/<name>/mean
    assert trainer._has_async_funcs  # detected as async: awaited on the trainer's loop

    ids = [[1, 2]] * len(COMPLETIONS)
    out = trainer._calculate_rewards(inputs_for(COMPLETIONS), [PROMPT] * 4, COMPLETIONS, ids)

    # The judge failed on the third completion: NaN in every column of TRL's reward table (its
    # `correct` too), so TRL leaves the completion out instead of training it on `correct` alone.
    assert rewards_of(out) == [[1.0, 1.0], [0.0, 0.5], [None, None], [0.0, 0.0]]
    assert trainer._pending_metrics["openjudge/helpful/failed"] == [0.25]
    assert trainer._pending_metrics["openjudge/correct/failed"] == [0.0]
    assert trainer._pending_extra_logs["openjudge/helpful/error"] == ["", "", "provider_error", ""]


@logging_hooks_and_drop
def test_aggregate_function_and_fallback(tmp_path: Path, judge_server: JudgeServerProcess) -> None:
    graders = write_graders_yaml(tmp_path, judge_server.base_url)
    strict = OpenJudgeRewards.from_config(graders).aggregate()
    lenient = OpenJudgeRewards.from_config(graders, fallback_score=-1.0).aggregate()
    assert strict.__name__ == "reward"
    trainer = make_trainer(tmp_path / "out", [strict], dataset())

    out = trainer._calculate_rewards(inputs_for(COMPLETIONS), [PROMPT] * 4, COMPLETIONS, [[1]] * 4)
    assert rewards_of(out) == [[1.0], [round(0.5 / 3, 6)], [None], [0.0]]  # (2 x correct + helpful) / 3
    # The failed row is NaN in every column: TRL marks it unscorable instead of rewarding it 0.
    assert trainer._pending_metrics["openjudge/reward/failed"] == [0.25]
    assert trainer._pending_metrics["openjudge/helpful/failed"] == [0.25]

    trainer.reward_funcs = [lenient]  # type: ignore[list-item]  # TRL's hint omits the async functions it awaits
    out = trainer._calculate_rewards(inputs_for(COMPLETIONS), [PROMPT] * 4, COMPLETIONS, [[1]] * 4)
    assert rewards_of(out)[2] == [-1.0]  # only because a fallback was configured


def test_conversational_batch(tmp_path: Path, judge_server: JudgeServerProcess) -> None:
    graders = write_graders_yaml(tmp_path, judge_server.base_url)
    rewards = OpenJudgeRewards.from_config(graders, on_failure="neutral")  # no failure here: any TRL
    trainer = make_trainer(tmp_path / "out", rewards.per_grader(), dataset())
    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": PROMPT}]
    completions = [
        [{"role": "assistant", "content": "4 #oj:score=4"}],
        [{"role": "assistant", "content": [{"type": "text", "text": "five #oj:score=2"}]}],
    ]
    rows = [{"prompt": prompt, "answer": "4"}] * 2
    out = trainer._calculate_rewards(rows, [prompt] * 2, completions, [[1]] * 2)
    assert rewards_of(out) == [[1.0, 0.75], [0.0, 0.25]]


def test_concurrency_is_shared_across_the_functions_of_a_batch(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    # A slow judge (0.3 s per call). 8 completions x 2 judge-calling functions = 16 calls;
    # the set allows 4 gradings in flight, shared by both functions TRL runs at once.
    rewards = OpenJudgeRewards.from_config(
        write_graders_yaml(tmp_path, judge_server.base_url, provider_limit=64),
        max_concurrency=4,
        on_failure="neutral",  # no failure here: any TRL
    )
    funcs = [rewards.grader("helpful"), rewards.aggregate()]
    trainer = make_trainer(tmp_path / "out", funcs, dataset(4))
    completions = [f"answer {'4' if i % 2 == 0 else '5'} #oj:latency_s=0.3,score=5 n{i}" for i in range(8)]
    judge_server.reset_stats()

    started = time.perf_counter()
    out = trainer._calculate_rewards(inputs_for(completions), [PROMPT] * 8, completions, [[1]] * 8)
    elapsed = time.perf_counter() - started

    stats = judge_server.stats()
    assert stats.chat_requests == 16
    assert 1 < stats.peak_in_flight <= 4
    assert elapsed < 16 * 0.3  # one call at a time would take 4.8 s; the floor is 4 rounds of 0.3 s
    assert rewards_of(out) == [[1.0, 1.0] if i % 2 == 0 else [1.0, round(1 / 3, 6)] for i in range(8)]


@logging_hooks_and_drop
def test_a_training_step_logs_each_grader(tmp_path: Path, judge_server: JudgeServerProcess) -> None:
    # The whole path: the trainer samples completions from the tiny model, scores them, and steps.
    rewards = OpenJudgeRewards.from_config(write_graders_yaml(tmp_path, judge_server.base_url))
    trainer = make_trainer(tmp_path / "out", rewards.per_grader(), dataset(), reward_weights=[2.0, 1.0])
    trainer.train()
    logged = trainer.state.log_history[0]
    # Each of the step's 4 completions scores the judge's default 3 on 1..5 (0.5), or 0 when the
    # tiny model wrote only opener words ("the answer is ?"): a degenerate response, scored before the judge.
    helpful = logged["rewards/helpful/mean"]
    assert 0.0 <= helpful <= 0.5 and helpful * 8 == pytest.approx(round(helpful * 8))
    assert 0.0 <= logged["rewards/correct/mean"] <= 1.0
    assert logged["openjudge/helpful/failed"] == 0.0
