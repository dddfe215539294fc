"""Typed reward functions in the shape of OpenJudge's VERL guide.

Importable as ``pkg://tests.integrations.verl.guide_functions``.
"""

from __future__ import annotations

from openjudge.integrations.verl import BaseOpenJudgeRewardFunction, RewardResult, RewardSample


class LengthRank(BaseOpenJudgeRewardFunction):
    """Listwise within a prompt group: the shortest response scores 1, the others 0; records the groups."""

    def __init__(self) -> None:
        self.calls: list[dict[str, list[int]]] = []

    async def compute_batch_scores(
        self, prompt_to_samples: dict[str, list[RewardSample]]
    ) -> list[RewardResult]:
        self.calls.append({p: [s.original_index for s in group] for p, group in prompt_to_samples.items()})
        results: list[RewardResult] = []
        for group in prompt_to_samples.values():
            shortest = min(len(s.response) for s in group)
            for s in group:
                score = 1.0 if len(s.response) == shortest else 0.0
                info: dict[str, float | int | str | bool | None] = {
                    "length": len(s.response),
                    "group_size": len(group),
                }
                results.append(RewardResult(s.original_index, s.group_index, score, info))
        return results


length_rank = LengthRank()
