"""The chat-model protocol every judge backend implements, and what it returns."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from openjudge.results import TokenUsage

__all__ = [
    "CachingChatModel",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "ModelCapabilities",
    "OutputSpec",
    "Sampling",
    "StructuredOutputMode",
    "TokenLogprob",
    "message_chars",
]

StructuredOutputMode: TypeAlias = Literal["json_schema", "json_object", "prompt"]
"""How a backend can be asked for JSON, strongest first:

* ``json_schema``: ``response_format={"type": "json_schema", ...}`` (OpenAI, vLLM);
* ``json_object``: ``{"type": "json_object", "schema": ...}`` (llama.cpp and similar);
* ``prompt``: no response_format; the schema is described in the prompt only.
"""


def message_chars(messages: Sequence[Mapping[str, object]]) -> int:
    """Characters of text in chat messages (string contents and text parts)."""
    total = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(
                len(p["text"]) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
            )
    return total


class ModelCapabilities(BaseModel):
    """What a backend supports; the LLM grader picks its strategy from this."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    structured_output: StructuredOutputMode = "json_schema"
    logprobs: bool = True
    max_top_logprobs: int = Field(default=20, ge=0)
    image_input: bool = True
    """Takes chat-completions ``image_url`` content parts (whether the model can see them is the server's)."""
    audio_input: bool = True
    """Takes chat-completions ``input_audio`` content parts."""
    reasoning_effort: bool = True
    """Passes :attr:`Sampling.reasoning_effort` to the server."""


class Sampling(BaseModel):
    """Sampling parameters for a call. ``None`` means "leave to the server"."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = Field(default=None, gt=0)
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    reasoning_effort: str | None = None
    """A reasoning model's effort (``low``, ``medium``, ...), where the backend takes it
    (:attr:`ModelCapabilities.reasoning_effort`)."""
    extra_body: Mapping[str, JsonValue] | None = None
    """Provider-specific request fields merged into the request body."""

    def merged(self, override: Sampling | None) -> Sampling:
        """This sampling with every field that ``override`` sets replacing ours."""
        if override is None:
            return self
        update = override.model_dump(exclude_none=True)
        return self.model_copy(update=update) if update else self


_NO_SAMPLING = Sampling()


@dataclass(frozen=True, slots=True, eq=False)
class OutputSpec:
    """A structured output request: a JSON schema and the name it is sent under.

    Specs compare and hash by identity: build them once (``for_model`` caches per class)
    so providers can cache the request format derived from them.
    """

    name: str
    schema: Mapping[str, Any]
    schema_text: str

    @classmethod
    def from_schema(cls, name: str, schema: Mapping[str, Any]) -> OutputSpec:
        return cls(name=name, schema=schema, schema_text=json.dumps(schema, ensure_ascii=False))

    @classmethod
    def for_model(cls, model: type[BaseModel]) -> OutputSpec:
        """The spec for a pydantic model, built once per class."""
        return _spec_for(model)


@functools.cache
def _spec_for(model: type[BaseModel]) -> OutputSpec:
    return OutputSpec.from_schema(model.__name__, model.model_json_schema())


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    """One generated token with its log-probability and the top alternatives."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


_DEFAULT_COMPLETION_ESTIMATE = 512


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One logical chat call, as a transport receives it for each attempt.

    Attributes:
        messages: The conversation in OpenAI's wire format.
        output: The structured output asked for, if any.
        sampling: The call's sampling (the model's defaults merged with the caller's).
        top_logprobs: Alternatives per token to return, if logprobs are wanted.
    """

    messages: Sequence[Mapping[str, Any]]
    output: OutputSpec | None = None
    sampling: Sampling = _NO_SAMPLING
    top_logprobs: int | None = None

    def prompt_chars(self) -> int:
        """Characters of the messages' text contents (text parts of a list of parts included)."""
        return message_chars(self.messages)

    def estimated_tokens(self) -> int:
        """A cheap upper-ish estimate (4 chars per token) used to reserve TPM budget."""
        return self.prompt_chars() // 4 + (self.sampling.max_tokens or _DEFAULT_COMPLETION_ESTIMATE)


_NO_USAGE = TokenUsage()


class ChatResponse(NamedTuple):
    """What a chat call returned (immutable).

    A transport builds one per attempt; the model that ran the call returns a new one
    carrying the whole call's usage and latency. A named tuple rather than a frozen
    dataclass: two are built per judge call, and a frozen dataclass costs several
    microseconds to construct where a tuple costs a fraction of one.
    Gate: ``python -m bench.runner ratios`` (framework CPU per judge call <= 0.10x raw aiohttp's).

    Attributes:
        content: The assistant's text ("" if none).
        usage: Tokens spent, requests counted (retries included; 0 when served from a cache).
        finish_reason: Why generation stopped (``stop``, ``length``, ...), if known.
        logprobs: Per-token log-probabilities, when requested and returned.
        latency_s: Time the backend took over every attempt of the call (waiting for the
            provider's limits and retry backoff excluded).
        model: The model name the server reported.
        cached: Served from the judge cache rather than by the backend.
        cache_key: The cache entry this reply is stored under, when the model that
            returned it caches; see :class:`CachingChatModel`.
        queue_s: Time the call waited for the provider's concurrency and rate limits.
        system_fingerprint: The server's name for the configuration that answered
            (OpenAI's ``system_fingerprint``; llama.cpp sends its build), if it sent one.
    """

    content: str
    usage: TokenUsage = _NO_USAGE
    finish_reason: str | None = None
    logprobs: tuple[TokenLogprob, ...] = ()
    latency_s: float = 0.0
    model: str = ""
    cached: bool = False
    cache_key: str | None = None
    queue_s: float = 0.0
    system_fingerprint: str | None = None


@runtime_checkable
class ChatModel(Protocol):
    """A judge backend.

    Implementations own their client and their limits; ``achat`` enforces them
    (retries, concurrency, rate limits, timeouts) and raises
    :class:`~openjudge.models._errors.ChatModelError` when a call finally fails.
    """

    @property
    def model_name(self) -> str: ...

    @property
    def capabilities(self) -> ModelCapabilities: ...

    async def achat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        output: OutputSpec | None = None,
        sampling: Sampling | None = None,
        top_logprobs: int | None = None,
        cache_tag: str = "",
    ) -> ChatResponse: ...


@runtime_checkable
class CachingChatModel(ChatModel, Protocol):
    """A chat model with a judge cache that keeps only the replies its caller could use.

    A reply carrying a ``cache_key`` is in the cache; the caller settles it once it has
    read it, and an unusable one (a verdict that failed to parse, a content-filtered
    reply) is evicted, so the next identical call asks the backend again. Failed calls
    are never stored.
    """

    async def asettle(self, response: ChatResponse, *, usable: bool) -> None: ...
