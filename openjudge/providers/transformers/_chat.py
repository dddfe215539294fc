"""The generative judge: ``kind: transformers`` for the ``llm`` graders.

:class:`TransformersChatModel` is a :class:`~openjudge.models.chat_client.ChatClient`
around :class:`TransformersChatTransport`, which turns a
:class:`~openjudge.models.chat_model.ChatRequest` into a
:class:`~openjudge.providers.transformers._requests.GenerationRequest`, runs it through the shared
:class:`~openjudge.providers.transformers._local_model.LocalModel` and returns a ``ChatResponse``.
The core adds retries, the concurrency limit, usage, deduplication and the cache.

Caching: replies are cacheable like a server's. The cache key holds the checkpoint
(path or hub id, revision, and for a local directory a digest of its files' names,
sizes and modification times), what changes its outputs (dtype, device, chat template)
and the whole generation request, so a checkpoint saved again at the same path misses.
A hub id without a pinned ``revision`` is keyed by its name only: pin a commit, or turn
the cache off, when the hub copy may change.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from typing import TYPE_CHECKING, Any

from openjudge.models._limits import ConnectionLimits
from openjudge.models.cache import JudgeCache
from openjudge.models.chat_client import ChatClient
from openjudge.models.chat_model import (
    ChatRequest,
    ChatResponse,
    ModelCapabilities,
    OutputSpec,
    Sampling,
    StructuredOutputMode,
    TokenLogprob,
)
from openjudge.models.policy import ProviderPolicy
from openjudge.providers import _json
from openjudge.providers._structured import strict_schema
from openjudge.providers.transformers._local_model import LocalModel, generative_model
from openjudge.providers.transformers._requests import GenerationRequest
from openjudge.providers.transformers._settings import DType, TransformersSettings, checkpoint_fingerprint
from openjudge.providers.transformers._transport import LocalTransport, default_policy
from openjudge.results import TokenUsage

if TYPE_CHECKING:
    from pydantic import SecretStr

    from openjudge.providers.transformers._generation import Generation
    from openjudge.providers.transformers._reward import TransformersRewardModel

__all__ = ["MAX_TOP_LOGPROBS", "TransformersChatModel", "TransformersChatTransport", "constraints_installed"]

MAX_TOP_LOGPROBS = 20

_GREEDY = Sampling(temperature=0.0)


def constraints_installed() -> bool:
    """Whether llguidance (constrained decoding, part of the ``transformers`` extra) is installed."""
    return importlib.util.find_spec("llguidance") is not None


@functools.lru_cache(maxsize=256)
def _schema_text(output: OutputSpec) -> str:
    return json.dumps(strict_schema(output.schema), ensure_ascii=False)


class TransformersChatTransport(LocalTransport[GenerationRequest, "Generation"]):
    """One chat attempt: a row of the next batched ``generate`` on the local model.

    Args:
        local_model: The causal LM and its batcher.
        structured_output: ``json_schema`` constrains decoding to the caller's schema;
            ``prompt`` generates freely.
    """

    def __init__(
        self, local_model: LocalModel[GenerationRequest, Generation], structured_output: StructuredOutputMode
    ) -> None:
        super().__init__(local_model)
        self.structured_output: StructuredOutputMode = structured_output
        self._identity: dict[str, Any] | None = None

    def generation_request(self, request: ChatRequest) -> GenerationRequest:
        """What the model runs for ``request`` (sampling defaults and caps applied)."""
        sampling = request.sampling
        schema = (
            _schema_text(request.output)
            if request.output is not None and self.structured_output == "json_schema"
            else None
        )
        return GenerationRequest(
            messages=tuple(request.messages),
            max_new_tokens=sampling.max_tokens or self.local_model.settings.max_new_tokens,
            temperature=sampling.temperature or 0.0,
            top_p=sampling.top_p,
            seed=sampling.seed,
            stop=tuple(sampling.stop or ()),
            top_logprobs=min(request.top_logprobs or 0, MAX_TOP_LOGPROBS),
            json_schema=schema,
        )

    def wire_body(self, request: ChatRequest) -> bytes | None:
        g = self.generation_request(request)
        body = {
            "checkpoint": self._checkpoint(),
            "messages": g.messages,
            "max_new_tokens": g.max_new_tokens,
            "temperature": g.temperature,
            "top_p": g.top_p,
            "seed": g.seed,
            "stop": g.stop,
            "top_logprobs": g.top_logprobs,
            "json_schema": g.json_schema,
        }
        try:
            return _json.dumps(body)
        except TypeError:  # content JSON cannot hold (a template may still render it): not cacheable
            return None

    def _checkpoint(self) -> dict[str, Any]:
        # Stat'ed once, on the first keyed call: the loaded weights do not change afterwards.
        if self._identity is None:
            s = self.local_model.settings
            self._identity = {
                "model": s.model,
                "gguf_file": s.gguf_file,
                "revision": s.revision,
                "files": checkpoint_fingerprint(s.model),
                "dtype": s.dtype,
                "device": s.device,
                "chat_template": s.chat_template,
            }
        return self._identity

    async def attempt(self, request: ChatRequest, timeout_s: float) -> ChatResponse:
        out = await self.run(self.generation_request(request), timeout_s)
        return ChatResponse(
            out.text,
            TokenUsage(out.prompt_tokens, out.completion_tokens, 1),
            out.finish_reason,
            tuple(TokenLogprob(t.token, t.logprob, t.top) for t in out.tokens),
            model=self.model_name,
        )


class TransformersChatModel(ChatClient):
    """A judge running in this process on torch: a causal LM with a chat template.

    Concurrent calls are batched (up to ``max_batch_size`` per ``generate``) on one
    inference thread, so the event loop never waits for the model. The model loads on
    the first call (or :meth:`load`), once, and is shared by every grader using this object.
    Decoding is greedy unless the sampling names a temperature above 0.

    Args:
        model: A local directory or hub id, or a full :class:`TransformersSettings`.
        api_key, base_url: Refused (a local model has neither); accepted so every
            provider kind takes the registry's keywords.
        sampling: Defaults for every call (``extra_body`` is not used).
        policy: Timeout per attempt (queueing included, loading excluded), retries, limits.
        structured_output: ``json_schema`` constrains generation to the grader's schema
            with llguidance (the default when it is installed); ``prompt`` generates freely
            and leaves the grader to parse tolerantly.
        limits: Shared limits (see :class:`~openjudge.models._limits.ConnectionLimits`).
        cache: Serve and store deterministic replies (see the module's note on keys).
        device, dtype, max_batch_size, batch_window_s, max_new_tokens, max_input_tokens,
        revision, trust_remote_code, chat_template, gguf_file, cache_dir: See
            :class:`TransformersSettings` (ignored when ``model`` is a settings object).

    Example:
        >>> judge = TransformersChatModel("Qwen/Qwen3-0.6B", device="cuda", max_batch_size=32)  # doctest: +SKIP
    """

    transport: TransformersChatTransport

    def __init__(
        self,
        model: str | TransformersSettings,
        api_key: str | SecretStr | None = None,
        base_url: str | None = None,
        *,
        sampling: Sampling | None = None,
        policy: ProviderPolicy | None = None,
        structured_output: StructuredOutputMode | None = None,
        limits: ConnectionLimits | None = None,
        cache: JudgeCache | None = None,
        device: str = "auto",
        dtype: DType = "auto",
        max_batch_size: int = 8,
        batch_window_s: float = 0.01,
        max_new_tokens: int = 512,
        max_input_tokens: int | None = None,
        revision: str | None = None,
        trust_remote_code: bool = False,
        chat_template: str | None = None,
        gguf_file: str | None = None,
        cache_dir: str | None = None,
    ) -> None:
        if api_key is not None or base_url is not None:
            raise ValueError(
                "kind 'transformers' runs the model in this process: remove base_url and api_key"
            )
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
                gguf_file=gguf_file,
                cache_dir=cache_dir,
            )
        )
        mode = _structured_output(structured_output)
        policy = policy or default_policy()
        super().__init__(
            TransformersChatTransport(generative_model(settings), mode),
            policy=policy,
            sampling=_GREEDY.merged(sampling),
            capabilities=ModelCapabilities(
                structured_output=mode,
                logprobs=True,
                max_top_logprobs=MAX_TOP_LOGPROBS,
                # A chat template of text: no image or audio parts, no reasoning effort.
                image_input=False,
                audio_input=False,
                reasoning_effort=False,
            ),
            cache=cache,
            limits=limits,
        )
        self.settings = settings
        self._reward_models: dict[int, TransformersRewardModel] = {}

    @property
    def local_model(self) -> LocalModel[GenerationRequest, Generation]:
        """The loaded-once model and its batcher (statistics, explicit loading)."""
        return self.transport.local_model

    def load(self) -> None:
        """Load the model now (blocking) instead of on the first call.

        Raises:
            ChatModelError: Loading failed.
        """
        self.transport.load()

    def checkpoint_dir(self) -> str:
        """What transformers loads for this judge: ``model`` itself, or a GGUF file's dequantized copy.

        A GGUF file is converted on the first call (once per machine, into ``cache_dir``);
        blocking. Load the same weights elsewhere with it, e.g. a policy to train:
        ``AutoModelForCausalLM.from_pretrained(judge.checkpoint_dir())``.
        """
        from openjudge.providers.transformers._loading import checkpoint_source

        return checkpoint_source(self.settings, "causal_lm")[0]

    def reward_model(self, *, label_index: int = 0) -> TransformersRewardModel:
        """A reward model (``*ForSequenceClassification``) from the same settings, policy and limits.

        It loads its own head, on its first call; a config's ``reward_model`` graders use it.
        """
        rm = self._reward_models.get(label_index)
        if rm is None:
            from openjudge.providers.transformers._reward import TransformersRewardModel

            rm = TransformersRewardModel(
                self.settings, label_index=label_index, policy=self.policy, limits=self.limits
            )
            self._reward_models[label_index] = rm
        return rm

    def close(self) -> None:
        """Stop the inference threads and free the models (this object cannot be used after)."""
        self.local_model.close()
        for rm in self._reward_models.values():
            rm.close()

    def __repr__(self) -> str:
        return f"TransformersChatModel(model={self.model_name!r}, device={self.settings.device!r})"


def _structured_output(asked: StructuredOutputMode | None) -> StructuredOutputMode:
    if asked is None:
        return "json_schema" if constraints_installed() else "prompt"
    if asked not in ("json_schema", "prompt"):
        raise ValueError(
            f"kind 'transformers' takes structured_output 'json_schema' (constrained decoding) or "
            f"'prompt', not {asked!r}"
        )
    if asked == "json_schema" and not constraints_installed():
        raise ImportError(
            "structured_output 'json_schema' needs llguidance: pip install 'openjudge-graders[transformers]' "
            "(or use structured_output: prompt)"
        )
    return asked
