"""A failed judgement through TRL's own reward and advantage path, on the installed TRL.

``GRPOTrainer._generate_and_score_completions(inputs)`` samples completions from a tiny
model, calls the reward functions (``_calculate_rewards``), sums them with
``reward_weights`` and computes GRPO's advantages: the code every TRL release the pin
allows (0.27 to 1.x) trains with. The suite runs on the installed TRL; the same tests run
on TRL 0.27 in a separate environment, where ``drop`` is refused (see ``_version``).

The judge is in-process: it scores a completion by its length and fails (HTTP 503) on the
first completion of each prompt it is asked about, so each group has exactly one failure.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import trl
from datasets import Dataset  # type: ignore[import-untyped]  # no py.typed

from openjudge.errors import SettingsError
from openjudge.integrations.trl import OpenJudgeRewards, _version
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatRequest
from tests.integrations.trl.helpers import make_trainer
from tests.integrations.trl.test_rewards import make_runner

pytestmark = pytest.mark.slow  # a real TRL GRPOTrainer

PROMPTS = ["what is 2+2 ?", "what is the answer ?"]
GENERATIONS = 4
DROPS = _version.drops_unscorable(trl.__version__)


class FirstFails:
    """Fails the first request about each prompt; otherwise scores 1 + len(answer) % 5."""

    def __init__(self) -> None:
        self.failed: dict[str, str] = {}  # prompt -> the completion the judge failed on

    def __call__(self, request: ChatRequest) -> str:
        text = str(request.messages[-1]["content"])
        fields = re.fullmatch(r"Q: <q>\n(.*)\n</q>\nA: <a>\n(.*)\n</a>", text, re.DOTALL)
        assert fields is not None, text
        question, answer = fields.groups()
        if question not in self.failed:
            self.failed[question] = answer
            raise ChatModelError("judge down", status_code=503, retryable=False)
        return json.dumps({"reason": "ok", "score": 1 + len(answer) % 5})


def score(trainer: Any) -> tuple[torch.Tensor, list[float]]:
    """One generation batch through TRL's own path: (rewards per function, advantages)."""
    seen: list[torch.Tensor] = []
    calculate: Callable[..., torch.Tensor] = trainer._calculate_rewards

    def spy(*args: object) -> torch.Tensor:
        out = calculate(*args)
        seen.append(out.clone())
        return out

    trainer._calculate_rewards = spy
    trainer.model.train()
    inputs = [{"prompt": p, "answer": "4"} for p in PROMPTS for _ in range(GENERATIONS)]
    out = trainer._generate_and_score_completions(inputs)
    return seen[0], [float(a) for a in out["advantages"].tolist()]


def make(tmp_path: Path, funcs: list[Any], weights: list[float]) -> Any:
    data = Dataset.from_dict({"prompt": PROMPTS, "answer": ["4", "4"]})
    return make_trainer(
        tmp_path / "out", funcs, data, num_generations=GENERATIONS, batch_size=8, reward_weights=weights
    )


def test_trl_trains_a_completion_whose_every_reward_is_none_as_its_version_says(tmp_path: Path) -> None:
    # The premise of the version guard, checked on TRL's own code: row 0 gets None from every function.
    def reward(completions: list[str], **_: object) -> list[float | None]:
        return [None, *(float(i % 3) for i in range(1, len(completions)))]

    rewards, advantages = score(make(tmp_path, [reward], [1.0]))
    assert math.isnan(rewards[0, 0])
    group = [float(v) for v in rewards[1:GENERATIONS, 0]]
    if DROPS:  # TRL 1.6.0 and later: unscorable, no advantage, out of the baseline
        assert advantages[0] == 0.0
        mean, std = statistics.mean(group), statistics.stdev(group)
        assert advantages[1] == pytest.approx((group[0] - mean) / (std + 1e-4), abs=1e-4)
    else:  # TRL before 1.6.0: summed to a reward of 0 and trained
        trained = [0.0, *group]
        mean, std = statistics.mean(trained), statistics.stdev(trained)
        assert advantages[0] == pytest.approx((0.0 - mean) / (std + 1e-4), abs=1e-4)
        assert advantages[0] != 0.0


def test_drop_leaves_a_failed_completion_out_of_every_column(tmp_path: Path) -> None:
    judge = FirstFails()
    if not DROPS:
        with pytest.raises(SettingsError, match=f"TRL {trl.__version__} turns a completion"):
            OpenJudgeRewards(make_runner(judge, with_aggregator=False))
        return
    trainer = make(
        tmp_path, OpenJudgeRewards(make_runner(judge, with_aggregator=False)).per_grader(), [2.0, 1.0]
    )
    rewards, advantages = score(trainer)
    assert len(judge.failed) == 2  # one failed completion per prompt
    for start in (0, GENERATIONS):
        rows = range(start, start + GENERATIONS)
        failed = [i for i in rows if math.isnan(rewards[i, 1])]
        assert len(failed) == 1 and math.isnan(rewards[failed[0], 0])  # `correct` left it out too
        assert advantages[failed[0]] == 0.0  # unscorable: no advantage
        kept = [i for i in rows if i not in failed]
        sums = [2.0 * float(rewards[i, 0]) + float(rewards[i, 1]) for i in kept]
        mean, std = statistics.mean(sums), statistics.stdev(sums)
        for i, total in zip(kept, sums, strict=True):  # the baseline is the scored members' alone
            assert advantages[i] == pytest.approx((total - mean) / (std + 1e-4), abs=1e-4)


def test_neutral_gives_a_failed_completion_zero_advantage(tmp_path: Path) -> None:
    judge = FirstFails()
    trainer = make(
        tmp_path,
        OpenJudgeRewards(make_runner(judge, with_aggregator=False), on_failure="neutral").per_grader(),
        [2.0, 1.0],
    )
    rewards, advantages = score(trainer)
    completions = list(trainer._logs["completion"])
    assert not torch.isnan(rewards).any()  # a number in every column, on every TRL version
    for start, prompt in zip((0, GENERATIONS), PROMPTS, strict=True):
        failed = judge.failed[prompt]
        rows = range(start, start + GENERATIONS)
        sums = [2.0 * float(rewards[i, 0]) + float(rewards[i, 1]) for i in rows]
        neutral = [i for i in rows if sums[i - start] == pytest.approx(statistics.mean(sums))]
        assert any(completions[i] == failed for i in neutral)  # the failed one's sum is its group's mean
        assert all(advantages[i] == pytest.approx(0.0, abs=1e-5) for i in neutral)  # zero advantage
