"""A reward function in the shape of OpenJudge's VERL guide, loaded by VERL's agent-loop worker.

It scores each response by its quality tag relative to the best of its group, and
reports the size of the group it received, so the test can see whole groups arrive.
"""

from __future__ import annotations

from openjudge.integrations.verl import BaseOpenJudgeRewardFunction, ExtraValue, RewardResult, RewardSample
from tests.integrations.verl.group.scripted import quality


class RelativeQuality(BaseOpenJudgeRewardFunction):
    async def compute_batch_scores(
        self, prompt_to_samples: dict[str, list[RewardSample]]
    ) -> list[RewardResult]:
        results = []
        for samples in prompt_to_samples.values():
            best = max(quality(s.response) for s in samples) or 1
            for s in samples:
                info: dict[str, ExtraValue] = {
                    "group_size": float(len(samples)),
                    "quality": float(quality(s.response)),
                }
                results.append(
                    RewardResult(s.original_index, s.group_index, quality(s.response) / best, info)
                )
        return results


compute_score_async = RelativeQuality()
