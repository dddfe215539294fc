"""The chat-core adapter of the generative judge: ``kind: transformers`` for ``llm`` graders.

The only module of the generative side that touches the chat core: it turns a
:class:`~openjudge.models.base_chat_model.ChatRequest` into a
:class:`~providers.transformers.generation.GenerationRequest`, runs it through the
shared :class:`~providers.transformers.engine.LocalModel`, and turns the result (or an
:class:`~providers.transformers.errors.InferenceError`) into a ``ChatResponse`` (or a
``ChatModelError``). Retries, the concurrency limit, usage and the cache are the core's.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Literal

from openjudge.models.base_chat_model import BaseChatModel, ChatRequest
from openjudge.models.chat_model import ChatResponse, ModelCapabilities, OutputSpec, Sampling, TokenLogprob
from openjudge.models.errors import ChatModelError
from openjudge.models.policy import ProviderPolicy
from openjudge.models.timeouts import timeout_scope
from openjudge.models.usage import TokenUsage
from providers.structured import strict_schema
from providers.transformers.engine import LocalModel, generative_model
from providers.transformers.errors import InferenceError
from providers.transformers.settings import DType, TransformersSettings

if TYPE_CHECKING:
    from providers.transformers.generation import Generation, GenerationRequest
    from providers.transformers.reward import TransformersRewardModel

__all__ = ["TransformersChatModel"]

MAX_TOP_LOGPROBS = 20

LocalStructuredOutput = Literal["json_schema", "prompt"]


@functools.lru_cache(maxsize=256)
def _schema_text(output: OutputSpec) -> str:
    return json.dumps(strict_schema(output.schema), ensure_ascii=False)


def to_chat_error(exc: InferenceError) -> ChatModelError:
    """The core's error for a local inference failure (same kind, retryability and type)."""
    return ChatModelError(exc.message, kind=exc.kind, retryable=exc.retryable, error_type=exc.error_type)


def default_policy() -> ProviderPolicy:
    """Local calls: 120 s per attempt (queueing included), the core's default retries and limits."""
    return ProviderPolicy(timeout_s=120.0)


class TransformersChatModel(BaseChatModel):
    """A judge running in this process on torch: a causal LM with a chat template.

    Concurrent calls are batched (up to ``max_batch_size`` per ``generate``) on one
    inference thread, so the event loop never waits for the model. The model loads on
    the first call (or :meth:`load`), once, and is shared by every grader using this object.

    Args:
        model: A local directory or hub id, or a full :class:`TransformersSettings`.
        device, dtype, max_batch_size, batch_window_s, max_new_tokens, max_input_tokens,
        revision, trust_remote_code, chat_template: See :class:`TransformersSettings`
            (ignored when ``model`` is a settings object).
        sampling: Defaults for every call; no temperature (or 0) decodes greedily.
        policy: Timeout per attempt (queueing included, loading excluded), retries, limits.
        structured_output: ``json_schema`` constrains generation to the grader's schema
            with llguidance (the default when it is installed); ``prompt`` generates freely
            and leaves the grader to parse tolerantly.

    Example:
        >>> judge = TransformersChatModel("Qwen/Qwen3-0.6B", device="cuda", max_batch_size=32)  # doctest: +SKIP
    """

    guards_own_timeout = True  # the timeout is applied around inference only, not around loading

    def __init__(
        self,
        model: str | TransformersSettings,
        *,
        device: str = "auto",
        dtype: DType = "auto",
        max_batch_size: int = 8,
        batch_window_s: float = 0.01,
        max_new_tokens: int = 512,
        max_input_tokens: int | None = None,
        revision: str | None = None,
        trust_remote_code: bool = False,
        chat_template: str | None = None,
        sampling: Sampling | None = None,
        policy: ProviderPolicy | None = None,
        structured_output: LocalStructuredOutput | None = None,
    ) -> None:
        settings = (
            model
            if isinstance(model, TransformersSettings)
            else TransformersSettings(
                model=model,
                device=device,
                dtype=dtype,
                max_batch_size=max_batch_size,
                batch_window_s=batch_window_s,
                max_new_tokens=max_new_tokens,
                max_input_tokens=max_input_tokens,
                revision=revision,
                trust_remote_code=trust_remote_code,
                chat_template=chat_template,
            )
        )
        if structured_output is None:
            from providers.transformers import constraints_installed

            structured_output = "json_schema" if constraints_installed() else "prompt"
        elif structured_output not in ("json_schema", "prompt"):
            raise ValueError(
                f"structured_output for a local model must be 'json_schema' (constrained decoding) or "
                f"'prompt', got {structured_output!r}"
            )
        elif structured_output == "json_schema":
            from providers.transformers import constraints_installed

            if not constraints_installed():
                raise ImportError(
                    "structured_output 'json_schema' needs llguidance: pip install 'openjudge[transformers]' "
                    "(or use structured_output: prompt)"
                )
        super().__init__(
            settings.model,
            policy=policy or default_policy(),
            sampling=sampling,
            capabilities=ModelCapabilities(
                structured_output=structured_output, logprobs=True, max_top_logprobs=MAX_TOP_LOGPROBS
            ),
        )
        self.settings = settings
        self.engine: LocalModel[GenerationRequest, Generation] = generative_model(settings)
        self._reward_models: dict[int, TransformersRewardModel] = {}

    @property
    def cache_identity(self) -> str:
        return f"transformers:{self.settings.model}@{self.settings.revision or 'default'}"

    def load(self) -> None:
        """Load the model now (blocking) instead of on the first call.

        Raises:
            ChatModelError: Loading failed.
        """
        try:
            self.engine.load()
        except InferenceError as exc:
            raise to_chat_error(exc) from None

    def reward_model(self, *, label_index: int = 0) -> TransformersRewardModel:
        """A reward model (``*ForSequenceClassification``) from the same settings and policy.

        It loads its own head, on its first call; a config's ``reward_model`` graders use it.
        """
        rm = self._reward_models.get(label_index)
        if rm is None:
            from providers.transformers.reward import TransformersRewardModel

            rm = TransformersRewardModel(self.settings, label_index=label_index, policy=self.policy)
            self._reward_models[label_index] = rm
        return rm

    def _generation_request(self, request: ChatRequest) -> GenerationRequest:
        from providers.transformers.generation import GenerationRequest

        sampling = request.sampling
        schema = (
            _schema_text(request.output)
            if request.output is not None and self.capabilities.structured_output == "json_schema"
            else None
        )
        return GenerationRequest(
            messages=tuple(request.messages),
            max_new_tokens=sampling.max_tokens or self.settings.max_new_tokens,
            temperature=sampling.temperature or 0.0,
            top_p=sampling.top_p,
            seed=sampling.seed,
            stop=tuple(sampling.stop or ()),
            top_logprobs=min(request.top_logprobs or 0, MAX_TOP_LOGPROBS),
            json_schema=schema,
        )

    async def _attempt(self, request: ChatRequest) -> ChatResponse:
        try:
            await self.engine.aload()
            async with timeout_scope(self.policy.timeout_s):
                out = await self.engine.run(self._generation_request(request))
        except InferenceError as exc:
            raise to_chat_error(exc) from None
        except TimeoutError:
            raise ChatModelError(
                f"{self.model}: no result within {self.policy.timeout_s:g}s (queueing included); "
                "raise timeout_s or lower the load",
                kind="timeout",
                retryable=True,
                error_type="TimeoutError",
            ) from None
        return ChatResponse(
            content=out.text,
            usage=TokenUsage(out.prompt_tokens, out.completion_tokens, 1),
            finish_reason=out.finish_reason,
            logprobs=tuple(TokenLogprob(t.token, t.logprob, t.top) for t in out.tokens),
            model=self.model,
        )

    async def aclose(self) -> None:
        """Nothing is bound to an event loop; :meth:`close` frees the model."""

    def close(self) -> None:
        """Stop the inference threads and free the models (this object cannot be used after)."""
        self.engine.close()
        for rm in self._reward_models.values():
            rm.close()

    def __repr__(self) -> str:
        return f"TransformersChatModel(model={self.model!r}, device={self.settings.device!r})"
