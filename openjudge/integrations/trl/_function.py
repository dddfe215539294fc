"""One TRL reward function: a callable object TRL awaits, named after its grader or aggregator."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from openjudge.integrations.scoring._scorer import RewardScorer
from openjudge.integrations.trl._collective import raise_together
from openjudge.integrations.trl._samples import TRLText

if TYPE_CHECKING:
    from openjudge.integrations.trl._rewards import OpenJudgeRewards

__all__ = ["OpenJudgeReward"]


class OpenJudgeReward:
    """One TRL reward function: ``await f(prompts, completions, completion_ids, **columns)``.

    Made by :meth:`~openjudge.integrations.trl.OpenJudgeRewards.grader`,
    :meth:`~openjudge.integrations.trl.OpenJudgeRewards.per_grader` or
    :meth:`~openjudge.integrations.trl.OpenJudgeRewards.aggregate`. ``__name__`` is the grader's (or aggregator's)
    name, which TRL uses in its logs (``rewards/<name>/mean``).

    Attributes:
        rewards: The set it belongs to (its options, its shared limit and ledger).
        target: The grader or aggregator whose score this function returns.
        is_aggregate: Whether ``target`` is an aggregator.
    """

    def __init__(
        self, rewards: OpenJudgeRewards, target: str, scorer: RewardScorer | None, *, aggregate: bool
    ) -> None:
        self.rewards = rewards
        self.target = target
        self.is_aggregate = aggregate
        self._scorer = scorer
        self.__name__ = target
        self.__qualname__ = target
        # TRL before 1.14 asks `inspect.iscoroutinefunction(f)` (0.27: `asyncio.iscoroutinefunction`)
        # about the object itself, not its `__call__`, and would call it without awaiting. inspect
        # reads the code flags of "function-like" objects (the protocol Cython functions use):
        # `__code__`, `__defaults__` and `__kwdefaults__` beside `__name__`. `__signature__` keeps
        # `inspect.signature(f)` that of the call, without `self`.
        call = type(self).__call__
        self.__code__ = call.__code__
        self.__defaults__ = call.__defaults__
        self.__kwdefaults__ = call.__kwdefaults__
        self.__signature__ = inspect.signature(self.__call__)

    @property
    def scorer(self) -> RewardScorer:
        """The scorer that grades for this function: the aggregator's, or that of the set's
        per-grader functions (every grader with a function, judged together)."""
        if self._scorer is not None:
            return self._scorer
        return self.rewards._together_scorer(frozenset(self.rewards._together))

    async def __call__(
        self,
        prompts: Sequence[TRLText],
        completions: Sequence[TRLText],
        completion_ids: Sequence[Sequence[int]] | None = None,
        **kwargs: object,
    ) -> list[float | None]:
        """Grade a batch; one reward per completion, ``None`` for a dropped grading.

        Args:
            prompts: One prompt per completion (text, or a list of messages).
            completions: The completions (text, or a list of messages).
            completion_ids: Their token ids.
            **kwargs: The other dataset columns (one value per completion) and TRL's own
                keywords (``trainer_state``, ``log_metric``, ``log_extra``, ...).

        Raises:
            FailureRateExceeded: More than ``max_failure_rate`` of the set's recent
                gradings failed (the message names the judges): training stops. With
                several training processes, every process raises at the same call
                when one does (a process's exception reaches the others, noted).
        """
        error: Exception | None = None
        rewards: list[float | None] = []
        try:
            rewards = await self.rewards._rewards_of(self, prompts, completions, completion_ids, kwargs)
        except Exception as exc:
            error = exc
        await raise_together(error)  # every training process raises, or none does
        return rewards

    def __repr__(self) -> str:
        kind = "aggregate" if self.is_aggregate else "grader"
        return f"<OpenJudgeReward {kind} {self.target!r}>"

    def __reduce__(
        self,
    ) -> tuple[Callable[[OpenJudgeRewards, str, bool], OpenJudgeReward], tuple[OpenJudgeRewards, str, bool]]:
        return _reward_of, (self.rewards, self.target, self.is_aggregate)


def _reward_of(rewards: OpenJudgeRewards, target: str, aggregate: bool) -> OpenJudgeReward:
    return rewards.aggregate(target) if aggregate else rewards.grader(target)
