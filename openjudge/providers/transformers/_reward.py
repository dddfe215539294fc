"""The in-process reward model: ``type: reward_model`` on ``kind: transformers``.

:class:`TransformersRewardModel` implements the core's
:class:`~openjudge.models.reward_model.RewardModel`, as vLLM's
:class:`~openjudge.providers.vllm_reward.VLLMRewardModel` does, so
:class:`~openjudge.graders.reward_model.RewardModelGrader` fronts either and configs
swap by provider. Calls go through the core's
:class:`~openjudge.models.engine.CallEngine` around a local transport: timeouts, bounded
retries, the concurrency limit and usage work as for network providers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from openjudge.models._limits import ConnectionLimits
from openjudge.models.engine import CallEngine
from openjudge.models.policy import ProviderPolicy
from openjudge.models.reward_model import Reward
from openjudge.providers._reward import labelled, scored_conversation
from openjudge.providers.transformers._local_model import LocalModel, reward_model
from openjudge.providers.transformers._requests import ScoreRequest
from openjudge.providers.transformers._settings import DType, TransformersSettings
from openjudge.providers.transformers._transport import LocalTransport, default_policy
from openjudge.results import TokenUsage

if TYPE_CHECKING:
    from openjudge.providers.transformers._scoring import Scores

__all__ = ["ScoreReply", "TransformersRewardModel"]


class ScoreReply(NamedTuple):
    """One attempt's result: ``(reward, *row)`` and the tokens read."""

    scores: tuple[float, ...]
    usage: TokenUsage


class _RewardTransport(LocalTransport[ScoreRequest, "Scores"]):
    """One scoring attempt: a row of the next batched forward pass; picks the reward label."""

    def __init__(self, local_model: LocalModel[ScoreRequest, Scores], label_index: int) -> None:
        super().__init__(local_model)
        self.label_index = label_index

    async def attempt(self, request: ScoreRequest, timeout_s: float) -> ScoreReply:
        scores = await self.run(request, timeout_s)
        return ScoreReply(
            labelled(scores.values, self.label_index, where=self.model_name),
            TokenUsage(scores.prompt_tokens, 0, 1),
        )


class TransformersRewardModel:
    """A sequence-classification reward model in this process (a :class:`~openjudge.models.RewardModel`).

    The conversation is ``[user: prompt, assistant: response]``, or ``messages`` then the
    response, formatted with the tokenizer's chat template; with neither, the response
    alone is scored as plain text. The reward is the head's raw output at
    ``label_index`` (no sigmoid or softmax), as vLLM's ``/classify`` with
    ``use_activation=False`` returns it.

    Args:
        model: A local directory or hub id, or a full :class:`TransformersSettings`.
        label_index: Which output of the head is the reward (0 for single-score models).
        policy: Timeout per attempt (queueing included, loading excluded), retries, limits.
        limits: Shared limits (see :class:`~openjudge.models._limits.ConnectionLimits`).
        device, dtype, max_batch_size, batch_window_s, max_input_tokens, revision,
        trust_remote_code, chat_template: See :class:`TransformersSettings` (ignored when
            ``model`` is a settings object).
    """

    def __init__(
        self,
        model: str | TransformersSettings,
        *,
        label_index: int = 0,
        policy: ProviderPolicy | None = None,
        limits: ConnectionLimits | None = None,
        device: str = "auto",
        dtype: DType = "auto",
        max_batch_size: int = 8,
        batch_window_s: float = 0.01,
        max_input_tokens: int | None = None,
        revision: str | None = None,
        trust_remote_code: bool = False,
        chat_template: str | None = None,
    ) -> None:
        if label_index < 0:
            raise ValueError(f"label_index must be >= 0, got {label_index}")
        self.settings = (
            model
            if isinstance(model, TransformersSettings)
            else TransformersSettings(
                model=model,
                device=device,
                dtype=dtype,
                max_batch_size=max_batch_size,
                batch_window_s=batch_window_s,
                max_input_tokens=max_input_tokens,
                revision=revision,
                trust_remote_code=trust_remote_code,
                chat_template=chat_template,
            )
        )
        self.label_index = label_index
        self._transport = _RewardTransport(reward_model(self.settings), label_index)
        self._engine: CallEngine[ScoreRequest, ScoreReply] = CallEngine(
            self._transport, policy or default_policy(), limits=limits
        )

    @property
    def model_name(self) -> str:
        return self.settings.model

    @property
    def local_model(self) -> LocalModel[ScoreRequest, Scores]:
        """The loaded-once model and its batcher (statistics, explicit loading)."""
        return self._transport.local_model

    @property
    def policy(self) -> ProviderPolicy:
        return self._engine.policy

    @property
    def usage(self) -> TokenUsage:
        """Tokens read and calls made so far."""
        return self._engine.usage

    def load(self) -> None:
        """Load the model now (blocking) instead of on the first call.

        Raises:
            ChatModelError: Loading failed.
        """
        self._transport.load()

    async def ascore(
        self, response: str, *, prompt: str | None = None, messages: Sequence[Mapping[str, Any]] | None = None
    ) -> Reward:
        """The reward for ``response`` (after ``prompt`` or ``messages``, if given).

        Raises:
            ChatModelError: The call failed after the policy's retries.
            InvalidInputError: Both ``prompt`` and ``messages`` were given.
        """
        conversation = scored_conversation(response, prompt=prompt, messages=messages)
        request = (
            ScoreRequest(text=response)
            if conversation is None
            else ScoreRequest(messages=tuple(conversation))
        )
        outcome = await self._engine.call(request)
        value, *values = outcome.response.scores
        usage = TokenUsage(outcome.response.usage.prompt_tokens, 0, outcome.requests)
        return Reward(value, tuple(values), self.model_name, usage, outcome.latency_s)

    async def aclose(self) -> None:
        """Nothing is bound to an event loop; :meth:`close` frees the model."""

    def close(self) -> None:
        """Stop the inference thread and free the model."""
        self.local_model.close()

    def __repr__(self) -> str:
        return f"TransformersRewardModel(model={self.model_name!r}, device={self.settings.device!r})"
