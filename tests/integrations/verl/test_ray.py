"""A real ``RewardLoopManager`` on local Ray: two ``RewardLoopWorker`` actors score a batch.

One Ray session for the module (starting Ray and two actors that import VERL costs ~15 s).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import ray
from verl.experimental.reward_loop import RewardLoopManager

from tests.integrations.verl.helpers import (
    FALLBACK,
    FAULT_KINDS,
    FAULT_PROMPTS,
    FAULT_REWARDS,
    importlib_overrides,
    last_token_rewards,
    make_batch,
    make_tokenizer,
    nonzero_only_at_last_token,
    trainer_config,
    words_of,
)

TOKENIZER = make_tokenizer(words_of(FAULT_PROMPTS))


@pytest.fixture(scope="module")
def reward_loop(graders_yaml: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RewardLoopManager]:
    tokenizer_dir = tmp_path_factory.mktemp("tokenizer")
    TOKENIZER.save_pretrained(str(tokenizer_dir))  # RewardLoopWorker loads actor_rollout_ref.model.path
    cfg = trainer_config(
        importlib_overrides(
            graders_yaml,
            f"+reward.openjudge.fallback_score={FALLBACK}",
            "reward.num_workers=2",
            f"actor_rollout_ref.model.path={tokenizer_dir}",
        )
    )
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield RewardLoopManager(config=cfg, rm_resource_pool=None)  # type: ignore[arg-type]  # None: no reward model
    finally:
        ray.shutdown()


def test_compute_rm_score_with_failing_judge_calls(reward_loop: RewardLoopManager) -> None:
    data = make_batch(TOKENIZER, FAULT_PROMPTS)
    for _ in range(2):  # the second step reuses the actors, their event loops and clients
        out = reward_loop.compute_rm_score(data)
        rm = out.batch["rm_scores"]
        assert rm.shape == data.batch["responses"].shape
        assert nonzero_only_at_last_token(rm, data)
        assert [score for _, score in last_token_rewards(rm, data)] == FAULT_REWARDS
        keys = out.meta_info["reward_extra_keys"]
        assert "openjudge/quality/error" in keys and "openjudge/failed" in keys
        assert set(out.non_tensor_batch) == set(keys)
        assert list(out.non_tensor_batch["openjudge/quality/error_kind"]) == FAULT_KINDS
        assert out.non_tensor_batch["openjudge/failed"].tolist() == [0, 0, 1, 1, 0, 1]
        quality = out.non_tensor_batch["openjudge/quality"]
        assert quality.dtype == np.dtype(object) and quality.tolist() == [3.0, 3.0, None, None, 3.0, None]
