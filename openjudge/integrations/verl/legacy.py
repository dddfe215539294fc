"""``OpenJudgeLegacyRewardManager``: the batch reward manager of VERL 0.4.1 to 0.7.0.

Those versions call ``reward_fn(batch, return_dict=True)`` once per training step with
the whole batch, so rows that share a ``uid`` (the ``rollout.n`` responses to one
prompt) are reliably grouped. The manager is registered as ``openjudge`` in VERL's
legacy registry (``verl.workers.reward_manager``) when this module is imported.

Options come from the constructor's ``openjudge`` argument, which VERL fills from
``+reward_model.reward_kwargs.openjudge.config=...`` (``load_reward_manager`` passes
``reward_kwargs`` as keyword arguments). It does not need the reward-loop base class,
so it also imports on versions that predate it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from openjudge.integrations.scoring._scorer import RewardScorer
from openjudge.integrations.verl._batch import BatchCall, ScorerRewardFunction
from openjudge.integrations.verl._functions import BaseOpenJudgeRewardFunction, find_reward_function
from openjudge.integrations.verl._scoring import shared_scorer
from openjudge.integrations.verl._settings import OpenJudgeVerlSettings, SettingsError, read_settings
from openjudge.integrations.verl._verl import INSTALL_HINT
from openjudge.integrations.verl.samples import Tokenizer

try:  # importing VERL runs its verl.plugins entry points (openjudge.integrations.verl.plugin)
    from verl.workers.reward_manager import register as register_legacy
except ImportError as exc:  # pragma: no cover - exercised only on old or missing verl
    raise ImportError(f"VERL's legacy reward-manager registry is missing.\n{INSTALL_HINT}\n({exc})") from exc

try:  # the abstract base exists from VERL 0.6.0
    from verl.workers.reward_manager.abstract import AbstractRewardManager as LegacyBase
except ImportError:  # pragma: no cover - VERL < 0.6
    LegacyBase = object  # type: ignore[assignment,misc]  # no base class before 0.6

if TYPE_CHECKING:
    import torch
    from verl import DataProto

__all__ = ["LEGACY_REGISTERED_NAME", "OpenJudgeLegacyRewardManager"]

logger = logging.getLogger(__name__)

LEGACY_REGISTERED_NAME = "openjudge"
"""The name in VERL's legacy registry (``reward_model.reward_manager=openjudge``)."""


class OpenJudgeLegacyRewardManager(BatchCall, LegacyBase):
    """Scores whole batches, grouped by ``uid``; works with or without a running event loop.

    Args:
        tokenizer: The policy tokenizer.
        num_examine: Log this many decoded samples per batch at INFO.
        compute_score: A :class:`~openjudge.integrations.verl.BaseOpenJudgeRewardFunction` (or VERL's
            wrapper around one); anything else is ignored in favour of ``openjudge``.
        reward_fn_key: The non-tensor column holding the data source.
        openjudge: The options of :class:`~openjudge.integrations.verl._settings.OpenJudgeVerlSettings`.
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
        self.batch_tokenizer = tokenizer
        self.num_examine = num_examine
        self.compute_score = compute_score
        self.reward_fn_key = reward_fn_key
        if kwargs:
            logger.debug("OpenJudgeLegacyRewardManager ignores reward_kwargs %s", sorted(kwargs))
        function = find_reward_function(compute_score)
        self._scorer: RewardScorer | None = None
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

    def precomputed(self, data: DataProto, return_dict: bool) -> torch.Tensor | dict[str, object] | None:
        """Scores a reward model already computed (``rm_scores``), returned as they are, as VERL's own do."""
        if "rm_scores" not in data.batch.keys():  # noqa: SIM118  # TensorDict membership is by key tuple; keys() as VERL does
            return None
        scores: torch.Tensor = data.batch["rm_scores"]
        if not return_dict:
            return scores
        keys = data.meta_info.get("reward_extra_keys", [])
        return {"reward_tensor": scores, "reward_extra_info": {k: data.non_tensor_batch[k] for k in keys}}


register_legacy(LEGACY_REGISTERED_NAME)(OpenJudgeLegacyRewardManager)
