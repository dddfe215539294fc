"""The chat-core adapter of the reward model: ``type: reward_model`` on ``kind: transformers``.

The only module of the reward side that touches the core. :class:`TransformersRewardModel`
has the vLLM reward client's ``ascore`` signature and returns the same
:class:`~providers.vllm_reward.Reward`, so :class:`~providers.vllm_reward.RewardModelGrader`
fronts either and configs swap by provider. Calls go through the core's policy engine
(a :class:`BaseChatModel` transport carrying the scoring request, as
:mod:`providers._pooling` does for vLLM): timeouts, bounded retries, the concurrency
limit and usage work as for network providers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from openjudge.graders.base_grader import InvalidInputError
from openjudge.models.base_chat_model import BaseChatModel, ChatRequest
from openjudge.models.chat_model import ChatResponse, Sampling
from openjudge.models.errors import ChatModelError
from openjudge.models.policy import ProviderPolicy
from openjudge.models.timeouts import timeout_scope
from openjudge.models.usage import TokenUsage
from providers.transformers.chat import default_policy, to_chat_error
from providers.transformers.engine import LocalModel, reward_model
from providers.transformers.errors import InferenceError
from providers.transformers.settings import DType, TransformersSettings
from providers.vllm_reward import Reward

if TYPE_CHECKING:
    from providers.transformers.scoring import ScoreRequest, Scores

__all__ = ["TransformersRewardModel"]


class _ScoreTransport(BaseChatModel):
    """The core's policy engine around the local scorer; ``messages[0]`` carries the request."""

    guards_own_timeout = True  # loading is excluded from the per-attempt timeout

    def __init__(
        self, engine: LocalModel[ScoreRequest, Scores], label_index: int, policy: ProviderPolicy
    ) -> None:
        super().__init__(engine.settings.model, policy=policy)
        self.engine = engine
        self._label_index = label_index

    async def _attempt(self, request: ChatRequest) -> ChatResponse:
        from providers.transformers.scoring import ScoreRequest

        body = request.messages[0]
        conversation = body.get("messages")
        score_request = ScoreRequest(
            messages=tuple(conversation) if conversation is not None else None, text=body.get("text")
        )
        try:
            await self.engine.aload()
            async with timeout_scope(self.policy.timeout_s):
                scores = await self.engine.run(score_request)
        except InferenceError as exc:
            raise to_chat_error(exc) from None
        except TimeoutError:
            raise ChatModelError(
                f"{self.model}: no score within {self.policy.timeout_s:g}s (queueing included)",
                kind="timeout",
                retryable=True,
                error_type="TimeoutError",
            ) from None
        if self._label_index >= len(scores.values):
            raise ChatModelError(
                f"{self.model}: label_index={self._label_index} but the model returns {len(scores.values)} value(s)",
                error_type="LabelIndexError",
            )
        values = [scores.values[self._label_index], *scores.values]
        return ChatResponse(
            content=json.dumps(values), usage=TokenUsage(scores.prompt_tokens, 0, 1), model=self.model
        )


class TransformersRewardModel:
    """A sequence-classification reward model running in this process.

    The conversation is ``[user: prompt, assistant: response]``, or ``messages`` then the
    response, formatted with the tokenizer's chat template; with neither, the response
    alone is scored as plain text. The reward is the head's raw output at
    ``label_index`` (no sigmoid or softmax), as vLLM's ``/classify`` with
    ``use_activation=False`` returns it.

    Args:
        model: A local directory or hub id, or a full :class:`TransformersSettings`.
        label_index: Which output of the head is the reward (0 for single-score models).
        policy: Timeout per attempt (queueing included, loading excluded), retries, limits.
        Others: See :class:`TransformersSettings` (ignored when ``model`` is a settings object).
    """

    def __init__(
        self,
        model: str | TransformersSettings,
        *,
        label_index: int = 0,
        device: str = "auto",
        dtype: DType = "auto",
        max_batch_size: int = 8,
        batch_window_s: float = 0.01,
        max_input_tokens: int | None = None,
        revision: str | None = None,
        trust_remote_code: bool = False,
        chat_template: str | None = None,
        policy: ProviderPolicy | None = None,
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
        self.engine: LocalModel[ScoreRequest, Scores] = reward_model(self.settings)
        self._transport = _ScoreTransport(self.engine, label_index, policy or default_policy())

    @property
    def model(self) -> str:
        return self.settings.model

    @property
    def policy(self) -> ProviderPolicy:
        return self._transport.policy

    @property
    def usage(self) -> TokenUsage:
        """Tokens read and calls made so far."""
        return self._transport.usage

    def load(self) -> None:
        """Load the model now (blocking) instead of on the first call.

        Raises:
            ChatModelError: Loading failed.
        """
        try:
            self.engine.load()
        except InferenceError as exc:
            raise to_chat_error(exc) from None

    async def ascore(
        self, response: str, *, prompt: str | None = None, messages: Sequence[Mapping[str, Any]] | None = None
    ) -> Reward:
        """The reward for ``response`` (after ``prompt`` or ``messages``, if given).

        Raises:
            ChatModelError: The call failed after the policy's retries.
            InvalidInputError: Both ``prompt`` and ``messages`` were given.
        """
        if prompt is not None and messages is not None:
            raise InvalidInputError("give either 'prompt' or 'messages', not both")
        body: dict[str, Any]
        if messages is not None:
            body = {"messages": [*(dict(m) for m in messages), {"role": "assistant", "content": response}]}
        elif prompt is not None:
            body = {
                "messages": [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}]
            }
        else:
            body = {"text": response}
        reply = await self._transport.achat([body], sampling=Sampling())
        value, *values = json.loads(reply.content)
        return Reward(float(value), tuple(values), reply.model, reply.usage, reply.latency_s)

    async def aclose(self) -> None:
        """Nothing is bound to an event loop; :meth:`close` frees the model."""

    def close(self) -> None:
        """Stop the inference thread and free the model."""
        self.engine.close()

    def __repr__(self) -> str:
        return f"TransformersRewardModel(model={self.model!r}, device={self.settings.device!r})"
