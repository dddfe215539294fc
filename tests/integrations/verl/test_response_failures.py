"""A response that breaks a grader is trained with the bottom score under VERL, never dropped.

Built as the other reward-loop tests are: VERL's own loader, its Hydra config and a
``DataProto`` batch built as the trainer builds it; rule graders only, so no judge server.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from verl import DataProto
from verl.trainer.ppo.reward import load_reward_manager

from openjudge.integrations.verl import OpenJudgeRewardManager
from openjudge.integrations.verl._reward_loop import RewardLoopOutput
from tests.integrations.verl.helpers import (
    Prompt,
    importlib_overrides,
    make_batch,
    make_tokenizer,
    trainer_config,
    words_of,
)

DEEP = "[" * 600 + "]" * 600  # one whitespace-free word: one token of the test tokenizer
PROMPTS = [Prompt("give the list", "[1]", ["[1]", DEEP, "[2]"])]
TOKENIZER = make_tokenizer(words_of(PROMPTS))

GRADERS = """\
version: 1
graders:
  json:
    type: json_match
    params: {strict_order: false}
    mapper: {response: response, reference: ground_truth}
"""


async def run_all(manager: OpenJudgeRewardManager, data: DataProto) -> list[RewardLoopOutput]:
    return list(await asyncio.gather(*(manager.run_single(data[i : i + 1]) for i in range(len(data)))))


def test_on_failure_drop_trains_a_response_failure_with_the_bottom_score(tmp_path: Path) -> None:
    graders = tmp_path / "graders.yaml"
    graders.write_text(GRADERS, encoding="utf-8")
    # The default policy, on_failure=drop: a GraderError would raise here; a response failure must not.
    cfg = trainer_config(importlib_overrides(graders))
    manager = load_reward_manager(cfg, TOKENIZER, reward_router_address=None, reward_model_tokenizer=None)
    assert isinstance(manager, OpenJudgeRewardManager)
    data = make_batch(TOKENIZER, PROMPTS)
    outs = asyncio.run(run_all(manager, data))
    assert [o["reward_score"] for o in outs] == [1.0, 0.0, 0.0]
    extras = [o["reward_extra_info"] for o in outs]
    assert [e["openjudge/failed"] for e in extras] == [0.0, 0.0, 0.0]  # scored, not a failure
    assert [e["openjudge/json/error"] for e in extras] == [0.0, 0.0, 0.0]
    rm = OpenJudgeRewardManager.assemble_rm_scores(data, [o["reward_score"] for o in outs])
    assert rm.shape == data.batch["responses"].shape
