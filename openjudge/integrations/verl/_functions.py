"""The reward-function API of OpenJudge's VERL guide: samples grouped by prompt in, results out.

A :class:`BaseOpenJudgeRewardFunction` receives every sample of a batch grouped by
prompt (by VERL ``uid``) and returns one :class:`RewardResult` per sample, matched back
by ``original_index``. Pass an instance as ``compute_score`` to
:class:`~openjudge.integrations.verl.OpenJudgeRewardManager` (or to the legacy manager).

On VERL's reward loop (0.7.1+) each call gets one trajectory; whole ``rollout.n`` groups
arrive on the legacy batch path, and on VERL 0.9's V1 trainer with
``openjudge.integrations.verl.group.OpenJudgeAgentLoopManager``, which calls
``compute_batch_scores`` once per group from the agent-loop worker.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import JsonValue

from openjudge.integrations.scoring._keys import ExtraValue

__all__ = [
    "BaseOpenJudgeRewardFunction",
    "ExtraValue",
    "RewardResult",
    "RewardSample",
    "find_reward_function",
]


@dataclass(slots=True)
class RewardSample:
    """One response to be scored, as the manager builds it from VERL's row.

    See :mod:`openjudge.integrations.verl._rows` for the row shapes each field is read from.

    Attributes:
        original_index: Row of the sample in the batch.
        group_index: Index of its prompt group in ``prompt_to_samples``.
        prompt: The question: the last ``user`` turn of ``raw_prompt`` (the decoded
            prompt when the row has no ``raw_prompt``).
        response: The decoded response (for tool agents: every assistant turn and tool
            output after the prompt, as one text).
        messages: The trajectory: the agent loop's structured messages when it exported
            them (assistant ``tool_calls``, ``tool`` turns, final answer), else
            ``prompt_messages`` plus the response as one assistant turn. A dataset
            column named ``messages`` is never taken as the trajectory.
        extra: The row's ``extra_info`` (``{}`` when absent).
        ground_truth: ``reward_model["ground_truth"]``, when the row has it.
        data_source: The row's data source (``reward_fn_key`` column).
        uid: VERL's prompt uid, when the row has it.
        prompt_text: The prompt as the policy saw it: the chat template decoded with
            special tokens skipped (system prompt and role words included).
        prompt_messages: The row's ``raw_prompt`` (the whole chat given to the policy),
            else one user turn holding ``prompt_text``.
        prompt_length, response_length: Token counts (VERL's ``prompt_len`` /
            ``response_len`` when the row has them).
        num_turns: Chat turns of the trajectory (VERL's ``__num_turns__``).
        turn_scores, tool_rewards: What a tool agent loop recorded per turn and per tool call.
        agent_fields: The agent loop's other extra fields.
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
    prompt_text: str = ""
    prompt_messages: list[dict[str, JsonValue]] = field(default_factory=list)
    prompt_length: int = 0
    response_length: int = 0
    num_turns: int | None = None
    turn_scores: JsonValue = None
    tool_rewards: JsonValue = None
    agent_fields: dict[str, JsonValue] = field(default_factory=dict)

    def grader_sample(self) -> dict[str, JsonValue]:
        """The fields graders see (mapper paths start here); absent values are left out."""
        sample: dict[str, JsonValue] = {
            "prompt": self.prompt,
            "prompt_text": self.prompt_text,
            "prompt_messages": list(self.prompt_messages),
            "response": self.response,
            "messages": list(self.messages),
            "extra_info": self.extra,
            "prompt_length": self.prompt_length,
            "response_length": self.response_length,
        }
        optional: dict[str, JsonValue] = {
            "ground_truth": self.ground_truth,
            "data_source": self.data_source,
            "uid": self.uid,
            "num_turns": self.num_turns,
            "turn_scores": self.turn_scores,
            "tool_rewards": self.tool_rewards,
        }
        sample.update({k: v for k, v in optional.items() if v is not None})
        if self.agent_fields:
            sample["agent_fields"] = self.agent_fields
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
