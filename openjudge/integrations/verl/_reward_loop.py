"""``OpenJudgeRewardManager``: VERL's reward-loop manager (0.7.1 to 0.9.x), and a batch call.

VERL's ``RewardLoopWorker`` (a Ray actor, one per ``reward.num_workers``) builds one
manager per process and awaits :meth:`OpenJudgeRewardManager.run_single` for every
trajectory, concurrently, on the actor's event loop. Graders and their providers are
built once per process (:func:`~openjudge.integrations.verl._scoring.shared_scorer`); clients and
limiters are created inside whichever loop is running, never the loop captured by
``RewardManagerBase.__init__``.

The same class serves the call shape of OpenJudge's VERL guide,
``OpenJudgeRewardManager(tokenizer=..., num_examine=..., compute_score=fn)(data, return_dict=True)``,
where ``fn`` is a :class:`~openjudge.integrations.verl.BaseOpenJudgeRewardFunction`.
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypedDict

from openjudge.integrations.scoring._scorer import Placement, RewardScorer, neutral_values
from openjudge.integrations.verl._batch import BatchCall, ScorerRewardFunction, reward_tensor, row_groups
from openjudge.integrations.verl._functions import (
    BaseOpenJudgeRewardFunction,
    ExtraValue,
    find_reward_function,
)
from openjudge.integrations.verl._hosted_judge import hosted_judge_from_verl
from openjudge.integrations.verl._keys import ExtraFields, with_v1_extra_fields
from openjudge.integrations.verl._ledger import report_start_error
from openjudge.integrations.verl._modes import reward_path
from openjudge.integrations.verl._rows import read_row
from openjudge.integrations.verl._scoring import shared_scorer
from openjudge.integrations.verl._settings import (
    OpenJudgeVerlSettings,
    SettingsError,
    config_value,
    read_settings,
)
from openjudge.integrations.verl._verl import INSTALL_HINT
from openjudge.integrations.verl.samples import Tokenizer, to_sample

try:  # importing VERL runs its verl.plugins entry points (openjudge.integrations.verl.plugin)
    from verl.experimental.reward_loop.reward_manager import register as register_reward_loop
    from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase
except ImportError as exc:  # pragma: no cover - exercised only on old or missing verl
    raise ImportError(
        f"OpenJudgeRewardManager needs VERL's reward loop (VERL >= 0.7.1); on older VERL use "
        f"openjudge.integrations.verl.OpenJudgeLegacyRewardManager.\n{INSTALL_HINT}\n(import failed: {exc})"
    ) from exc

if TYPE_CHECKING:
    import torch
    from verl import DataProto

__all__ = ["REGISTERED_NAME", "OpenJudgeRewardManager", "RewardLoopOutput"]

logger = logging.getLogger(__name__)

REGISTERED_NAME = "openjudge"
"""The name in VERL's reward-loop registry (``reward.reward_manager.name=openjudge``)."""


class RewardLoopOutput(TypedDict):
    """What ``run_single`` returns to VERL's ``RewardLoopWorker``."""

    reward_score: float
    reward_extra_info: dict[str, ExtraValue | ExtraFields]


_BASE_TAKES_COMPUTE_SCORE = "compute_score" in inspect.signature(RewardManagerBase.__init__).parameters


def _reward_options(config: object) -> object:
    """``config.reward.openjudge`` (0.7.1+) or ``config.reward_model.reward_kwargs.openjudge`` (0.7.0)."""
    options = config_value(config, "reward", "openjudge")
    if options is None:
        options = config_value(config, "reward_model", "reward_kwargs", "openjudge")
    return options


def _check_not_bypassed(config: object) -> None:
    """VERL never calls a manager when its reward model is on and no custom function is set."""
    enabled = config_value(config, "reward", "reward_model", "enable")
    custom = config_value(config, "reward", "custom_reward_function", "path")
    if enabled is True and not custom:
        raise SettingsError(
            "reward.reward_model.enable=True without reward.custom_reward_function.path: VERL's "
            "RewardLoopWorker then scores with the reward model as a classifier (compute_score_disrm) and "
            "never calls OpenJudgeRewardManager. To judge with openjudge (the hosted model is then the "
            "graders' 'kind: verl' provider), add reward.custom_reward_function.path=pkg://openjudge.integrations.verl "
            "reward.custom_reward_function.name=compute_score"
        )


class OpenJudgeRewardManager(BatchCall, RewardManagerBase):
    """Scores VERL trajectories with openjudge graders.

    Configure either a graders YAML (``+reward.openjudge.config=...``, see
    :class:`~openjudge.integrations.verl._settings.OpenJudgeVerlSettings`) or a
    :class:`~openjudge.integrations.verl.BaseOpenJudgeRewardFunction` as ``compute_score``.

    Args:
        config: VERL's trainer config (options are read from ``config.reward.openjudge``).
        tokenizer: The policy tokenizer.
        compute_score: VERL's custom reward function; used when it is (or wraps) a
            ``BaseOpenJudgeRewardFunction``, ignored otherwise.
        reward_router_address: Passed by ``RewardLoopWorker`` when VERL hosts a reward
            model: the graders YAML's ``kind: verl`` providers call it
            (:mod:`openjudge.integrations.verl._hosted_judge`).
        reward_model_tokenizer: Passed by ``RewardLoopWorker``; names the hosted model
            when the config does not.
        num_examine: Batch calls log this many decoded samples at INFO.
        reward_fn_key: The non-tensor column holding the data source.
        openjudge: Options given directly (overrides ``config.reward.openjudge``).
        scorer: Graders built in Python (a :class:`~openjudge.integrations.verl._scoring.RewardScorer`),
            used instead of a graders YAML; for subclasses and tests.
        **kwargs: Accepted and ignored, for arguments later VERL versions add.

    Raises:
        SettingsError: Neither a graders config nor a reward function was given, or both;
            or VERL's reward-model settings would bypass this manager.
        ConfigError: The graders YAML is invalid.
    """

    _warned: frozenset[str] = frozenset()

    def __init__(
        self,
        config: object = None,
        tokenizer: Tokenizer | None = None,
        compute_score: object = None,
        reward_router_address: str | None = None,
        reward_model_tokenizer: object = None,
        *,
        num_examine: int = 0,
        reward_fn_key: str = "data_source",
        openjudge: OpenJudgeVerlSettings | Mapping[str, object] | None = None,
        scorer: RewardScorer | None = None,
        **kwargs: object,
    ) -> None:
        if tokenizer is None:
            raise TypeError("OpenJudgeRewardManager needs the policy tokenizer (tokenizer=...)")
        # VERL annotates DictConfig / AutoTokenizer / a callable but stores them as they come.
        base_init: Callable[..., None] = RewardManagerBase.__init__
        if _BASE_TAKES_COMPUTE_SCORE:
            base_init(self, config, tokenizer, compute_score)
        else:  # VERL 0.7.0: RewardManagerBase(config, tokenizer)
            base_init(self, config, tokenizer)
        self.batch_tokenizer: Tokenizer = tokenizer
        self.num_examine = num_examine
        self.reward_fn_key = reward_fn_key
        if kwargs:
            logger.debug("OpenJudgeRewardManager ignores arguments %s", sorted(kwargs))
        try:
            self.function: BaseOpenJudgeRewardFunction = self._build(
                config, compute_score, reward_router_address, reward_model_tokenizer, openjudge, scorer
            )
        except Exception as exc:
            # VERL never awaits a RewardLoopWorker's constructor: without this, the worker dies
            # unseen and each trajectory sent to it fails. The replay buffer stops the run with it.
            report_start_error(
                f"openjudge: a reward worker could not start: {type(exc).__name__}: {exc} "
                "(fix the options or the graders YAML and start the run again)"
            )
            raise

    def _build(
        self,
        config: object,
        compute_score: object,
        reward_router_address: str | None,
        reward_model_tokenizer: object,
        openjudge: OpenJudgeVerlSettings | Mapping[str, object] | None,
        scorer: RewardScorer | None,
    ) -> BaseOpenJudgeRewardFunction:
        _check_not_bypassed(config)
        options = openjudge if openjudge is not None else _reward_options(config)
        function = find_reward_function(compute_score)
        self._scorer: RewardScorer | None = scorer
        if scorer is not None:
            function = ScorerRewardFunction(scorer)
        elif options is not None or function is None:
            if function is not None:
                raise SettingsError(
                    "both reward.openjudge options and a BaseOpenJudgeRewardFunction compute_score were given; "
                    "use one (the graders YAML, or your reward function)"
                )
            hosted = hosted_judge_from_verl(config, reward_router_address, reward_model_tokenizer)
            self._scorer = shared_scorer(read_settings(options), hosted)
            function = ScorerRewardFunction(self._scorer)
            self._warn_without_stop(config)
        return function

    @classmethod
    def _warn_without_stop(cls, config: object) -> None:
        """The V1 trainer stops on an outage only through the openjudge replay buffer."""
        path = reward_path(config)
        sampler = config_value(config, "trainer", "v1", "sampler", "custom_sampler", "name")
        if path.use_v1 and not (isinstance(sampler, str) and sampler.startswith("OpenJudgeReplayBuffer")):
            async_mode = path.trainer_mode != "sync"
            cls._warn_once(
                "no_stop",
                "openjudge: the V1 trainer runs without the openjudge replay buffer, so a judge outage cannot "
                "stop the run"
                + (
                    f" ({path.trainer_mode} evicts and regenerates failed groups with no limit)"
                    if async_mode
                    else " (it ends only when a whole batch has no trajectory left)"
                )
                + ": add trainer.v1.sampler.custom_sampler.path=pkg://openjudge.integrations.verl.sampler "
                f"trainer.v1.sampler.custom_sampler.name=OpenJudgeReplayBuffer{'Async' if async_mode else ''}",
            )

    @property
    def scorer(self) -> RewardScorer | None:
        """The YAML-configured scorer (``None`` when a reward function is used)."""
        return self._scorer

    async def run_single(self, data: DataProto) -> RewardLoopOutput:
        """Score one trajectory (its last row, as VERL's built-ins do).

        Returns:
            ``{"reward_score": float, "reward_extra_info": {...}}``, with the same extra
            keys for every sample.

        A sample the graders could not score follows ``on_failure``
        (:meth:`~openjudge.integrations.verl._scoring.RewardScorer.settle`): on the V1 trainer's
        streaming path ``drop`` raises, so VERL drops the trajectory; on the colocated
        path the reward is ``NaN`` until :meth:`assemble_rm_scores` gives it its
        group's mean; on the V0 streaming path it waits for its group's other rewards.

        Raises:
            SampleFailed: The sample failed, ``on_failure=drop``, and VERL drops it here.
            FailureRateExceeded: The run's failure rate was passed, or a reward worker
                could not start (the message names the judge and the counts).
        """
        last = len(data) - 1
        sample = await to_sample(
            read_row(data, last), self.batch_tokenizer, index=last, reward_fn_key=self.reward_fn_key
        )
        if sample.ground_truth is None and sample.data_source is None:
            self._warn_once(
                "no_dataset_fields",
                "openjudge: rows carry no reward_model/data_source/extra_info (VERL's V1 colocated "
                "reward-model path sends only prompts, responses and raw_prompt); graders mapped to "
                "ground_truth fail. Give the reward model its own pool (enable_resource_pool=True) to "
                "score on the streaming path, which has every dataset column.",
            )
        if self._scorer is not None:
            placement = self._placement(data, sample.uid)
            scored = await self._scorer.score(sample.grader_sample(), placement)
            path = reward_path(self.config)
            if placement.deferred and path.use_v1 and path.colocated:  # V1 validation reads extra_fields
                return {
                    "reward_score": scored.reward,
                    "reward_extra_info": with_v1_extra_fields(scored.extra),
                }
            return {"reward_score": scored.reward, "reward_extra_info": {**scored.extra}}
        self._warn_once(
            "groups_of_one",
            f"openjudge: {type(self.function).__name__} (a BaseOpenJudgeRewardFunction) gets one sample per "
            "call on VERL's reward loop: its prompt groups have one member, so listwise or relative scoring "
            "inside it sees no siblings (group judging: openjudge.integrations.verl.group)",
        )
        results = await self.function.compute_batch_scores({sample.prompt: [sample]})
        if len(results) != 1:
            raise ValueError(f"compute_batch_scores returned {len(results)} results for one sample")
        return {"reward_score": float(results[0].score), "reward_extra_info": dict(results[0].reward_info)}

    def _placement(self, data: DataProto, uid: str | None) -> Placement:
        """What VERL can do with a failure of this row (see :class:`Placement`)."""
        path = reward_path(self.config)
        streaming = "prompt_len" in data.non_tensor_batch  # only the agent loop's rows carry lengths
        if not streaming:
            return Placement(deferred=True, uid=uid)
        can_drop = path.use_v1
        return Placement(
            can_drop=can_drop, uid=uid, expected=path.group_size, posts_rewards=self._posts_rewards(can_drop)
        )

    def _posts_rewards(self, can_drop: bool) -> bool:
        """Whether a failed sample here may need its siblings' rewards (then every reward is posted)."""
        assert self._scorer is not None
        policy = self._scorer.policy.on_failure
        return policy == "neutral" or (policy == "drop" and not can_drop)

    @classmethod
    def assemble_rm_scores(cls, data: DataProto, scores: list[float]) -> torch.Tensor:
        """VERL's token-level rewards, with each deferred (``NaN``) failure given its group's mean.

        VERL calls this in the driver on the colocated path (``compute_rm_score``), with
        the whole batch: a failed row's group is its ``uid`` (V0) or, where VERL's V1
        colocated path sends none, its prompt tokens. A group with no scored member gets
        0.0 for every failed row (equal rewards: zero advantage).
        """
        finite = list(scores)
        if any(math.isnan(s) for s in finite):
            groups = row_groups(data)
            means = neutral_values(groups, [None if math.isnan(s) else s for s in finite])
            finite = [means[g] if math.isnan(s) else s for g, s in zip(groups, finite, strict=True)]
        return reward_tensor(data, finite)

    @classmethod
    def _warn_once(cls, key: str, message: str) -> None:
        if key not in cls._warned:  # once per process: managers are rebuilt, the warning need not be
            cls._warned = cls._warned | {key}
            logger.warning(message)


register_reward_loop(REGISTERED_NAME)(OpenJudgeRewardManager)
