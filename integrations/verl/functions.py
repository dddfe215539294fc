"""The seed guide's reward-function API: samples grouped by prompt in, results out.

A :class:`BaseOpenJudgeRewardFunction` receives every sample of a batch grouped by
prompt (by VERL ``uid``) and returns one :class:`RewardResult` per sample, matched back
by ``original_index``. Pass an instance as ``compute_score`` to
:class:`~integrations.verl.OpenJudgeRewardManager` (or to the legacy manager).

On VERL's reward loop (0.7.1+) each call gets one trajectory; whole ``rollout.n`` groups
arrive on the legacy batch path, and on VERL 0.9's V1 trainer with
``integrations.verl.group.OpenJudgeAgentLoopManager``, which calls
``compute_batch_scores`` once per group from the agent-loop worker.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from pydantic import JsonValue

__all__ = [
    "BaseOpenJudgeRewardFunction",
    "ExtraValue",
    "RewardResult",
    "RewardSample",
    "find_reward_function",
]

ExtraValue: TypeAlias = float | int | str | bool | None
"""A value in ``reward_extra_info``: a number, a flag, a string, or ``None`` (no value)."""


@dataclass(slots=True)
class RewardSample:
    """One response to be scored, as the manager decodes it from VERL's batch.

    Attributes:
        original_index: Row of the sample in the batch.
        group_index: Index of its prompt group in ``prompt_to_samples``.
        prompt: The decoded prompt (special tokens skipped, as VERL decodes it).
        response: The decoded response.
        messages: The row's ``messages``; else its ``raw_prompt`` plus the response as an
            assistant message; else ``[user: prompt, assistant: response]``.
        extra: The row's ``extra_info`` (``{}`` when absent).
        ground_truth: ``reward_model["ground_truth"]``, when the row has it.
        data_source: The row's data source (``reward_fn_key`` column).
        uid: VERL's prompt uid, when the row has it.
    """

    original_index: int
    group_index: int
    prompt: str
    response: str
    messages: list[dict[str, JsonValue]]
    extra: dict[str, JsonValue]
    ground_truth: JsonValue = None
    data_source: str | None = None
    uid: str | None = None

    def grader_sample(self) -> dict[str, JsonValue]:
        """The fields graders see (mapper paths start here); absent values are left out."""
        sample: dict[str, JsonValue] = {
            "prompt": self.prompt,
            "response": self.response,
            "messages": list(self.messages),
            "extra_info": self.extra,
        }
        if self.ground_truth is not None:
            sample["ground_truth"] = self.ground_truth
        if self.data_source is not None:
            sample["data_source"] = self.data_source
        if self.uid is not None:
            sample["uid"] = self.uid
        return sample


@dataclass(slots=True)
class RewardResult:
    """The score of one sample.

    Attributes:
        original_index: The sample's ``original_index``.
        group_index: The sample's ``group_index``.
        score: The reward.
        reward_info: Extra per-sample values for VERL's ``reward_extra_info``; every
            sample of a batch must have the same keys.
        details: Anything else worth keeping (reported as the ``details`` column).
    """

    original_index: int
    group_index: int
    score: float
    reward_info: dict[str, ExtraValue] = field(default_factory=dict)
    details: Mapping[str, object] | None = None


class BaseOpenJudgeRewardFunction(ABC):
    """Scores a batch of samples grouped by prompt (subclass it; no ``__init__`` required)."""

    @abstractmethod
    async def compute_batch_scores(
        self, prompt_to_samples: dict[str, list[RewardSample]]
    ) -> list[RewardResult]:
        """Score every sample.

        Args:
            prompt_to_samples: Groups in batch order, keyed by prompt text (a group whose
                prompt text another group already used gets `` [uid=<uid>]`` appended).

        Returns:
            One result per sample, in any order (matched by ``original_index``).
        """


def find_reward_function(compute_score: object) -> BaseOpenJudgeRewardFunction | None:
    """The reward function inside ``compute_score``, if it is (or wraps) one.

    VERL wraps custom reward functions with ``functools.partial(_call_with_kwargs, fn, kwargs)``
    (0.6+) or ``functools.wraps`` (older); both are looked through.
    """
    seen = 0
    candidate: object = compute_score
    while candidate is not None and seen < 8:
        seen += 1
        if isinstance(candidate, BaseOpenJudgeRewardFunction):
            return candidate
        args = getattr(candidate, "args", None)
        if isinstance(args, tuple):  # functools.partial
            for arg in args:
                if isinstance(arg, BaseOpenJudgeRewardFunction):
                    return arg
            candidate = getattr(candidate, "func", None)
            continue
        candidate = getattr(candidate, "__wrapped__", None)
    return None
