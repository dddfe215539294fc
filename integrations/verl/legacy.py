"""``OpenJudgeLegacyRewardManager``: the batch reward manager of VERL 0.4.1 to 0.7.0.

Those versions call ``reward_fn(batch, return_dict=True)`` once per training step with
the whole batch, so rows that share a ``uid`` (the ``rollout.n`` responses to one
prompt) are reliably grouped. The manager is registered as ``openjudge`` in VERL's
legacy registry (``verl.workers.reward_manager``) when this module is imported.

Options come from the constructor's ``openjudge`` argument, which VERL fills from
``+reward_model.reward_kwargs.openjudge.config=...`` (``load_reward_manager`` passes
``reward_kwargs`` as keyword arguments). The constructor only needs VERL's
``DataProto``; it does not need the reward-loop base class, so it also imports on
versions that predate it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Literal, overload

from integrations.verl._verl import DataProto, torch
from integrations.verl._verl_legacy import LegacyBase, register_legacy
from integrations.verl.batch import BatchRewards, ScorerRewardFunction, SyncBatchCall, score_batch
from integrations.verl.functions import BaseOpenJudgeRewardFunction, find_reward_function
from integrations.verl.rows import Tokenizer
from integrations.verl.scoring import SampleScorer, shared_scorer
from integrations.verl.settings import OpenJudgeVerlSettings, SettingsError, read_settings

__all__ = ["LEGACY_REGISTERED_NAME", "OpenJudgeLegacyRewardManager"]

logger = logging.getLogger(__name__)

LEGACY_REGISTERED_NAME = "openjudge"
"""The name in VERL's legacy registry (``reward_model.reward_manager=openjudge``)."""


class OpenJudgeLegacyRewardManager(LegacyBase):
    """Scores whole batches, grouped by ``uid``; works with or without a running event loop.

    Args:
        tokenizer: The policy tokenizer.
        num_examine: Log this many decoded samples per batch at INFO.
        compute_score: A :class:`~integrations.verl.BaseOpenJudgeRewardFunction` (or VERL's
            wrapper around one); anything else is ignored in favour of ``openjudge``.
        reward_fn_key: The non-tensor column holding the data source.
        openjudge: The options of :class:`~integrations.verl.settings.OpenJudgeVerlSettings`.
        **kwargs: Other ``reward_kwargs``; ignored.
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        num_examine: int = 0,
        compute_score: object = None,
        reward_fn_key: str = "data_source",
        *,
        openjudge: OpenJudgeVerlSettings | Mapping[str, object] | None = None,
        **kwargs: object,
    ) -> None:
        self.tokenizer = tokenizer
        self.num_examine = num_examine
        self.compute_score = compute_score
        self.reward_fn_key = reward_fn_key
        if kwargs:
            logger.debug("OpenJudgeLegacyRewardManager ignores reward_kwargs %s", sorted(kwargs))
        function = find_reward_function(compute_score)
        self._scorer: SampleScorer | None = None
        if openjudge is not None or function is None:
            if function is not None:
                raise SettingsError(
                    "both openjudge options and a BaseOpenJudgeRewardFunction compute_score were given; use one"
                )
            self._scorer = shared_scorer(
                read_settings(openjudge, where="reward_model.reward_kwargs.openjudge")
            )
            function = ScorerRewardFunction(self._scorer)
        self.function: BaseOpenJudgeRewardFunction = function
        self._sync_call = SyncBatchCall()

    async def ascore_batch(self, data: DataProto) -> BatchRewards:
        """Score a batch from async code."""
        return await score_batch(
            self.function,
            data,
            self.tokenizer,
            reward_fn_key=self.reward_fn_key,
            num_examine=self.num_examine,
        )

    @overload
    def __call__(self, data: DataProto, return_dict: Literal[False] = ...) -> torch.Tensor: ...
    @overload
    def __call__(self, data: DataProto, return_dict: Literal[True]) -> dict[str, object]: ...
    @overload
    def __call__(self, data: DataProto, return_dict: bool = ...) -> torch.Tensor | dict[str, object]: ...
    def __call__(self, data: DataProto, return_dict: bool = False) -> torch.Tensor | dict[str, object]:
        """Score a batch: the reward tensor, or ``{"reward_tensor", "reward_extra_info"}``.

        Runs on a private event-loop thread, so it works from plain code and from inside a
        running loop alike (the calling thread blocks until the batch is scored).
        """
        # Scores a reward model already computed: VERL's legacy managers return them as they are.
        if "rm_scores" in data.batch.keys():  # noqa: SIM118  # TensorDict membership is by key tuple; keys() as VERL does
            scores: torch.Tensor = data.batch["rm_scores"]
            if not return_dict:
                return scores
            keys = data.meta_info.get("reward_extra_keys", [])
            return {"reward_tensor": scores, "reward_extra_info": {k: data.non_tensor_batch[k] for k in keys}}
        return self._sync_call(self.ascore_batch, data, return_dict)

    def close(self) -> None:
        """Stop the helper thread, if it was started."""
        self._sync_call.close()


register_legacy(LEGACY_REGISTERED_NAME)(OpenJudgeLegacyRewardManager)
