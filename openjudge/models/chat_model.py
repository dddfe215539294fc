"""The chat-model protocol every judge backend implements, and what it returns."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from openjudge.models.usage import TokenUsage

__all__ = [
    "ChatModel",
    "ChatResponse",
    "ModelCapabilities",
    "OutputSpec",
    "Sampling",
    "StructuredOutputMode",
    "TokenLogprob",
]

StructuredOutputMode: TypeAlias = Literal["json_schema", "json_object", "prompt"]
"""How a backend can be asked for JSON, strongest first:

* ``json_schema``: ``response_format={"type": "json_schema", ...}`` (OpenAI, vLLM);
* ``json_object``: ``{"type": "json_object", "schema": ...}`` (llama.cpp and similar);
* ``prompt``: no response_format; the schema is described in the prompt only.
"""


class ModelCapabilities(BaseModel):
    """What a backend supports; the LLM grader picks its strategy from this."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    structured_output: StructuredOutputMode = "json_schema"
    logprobs: bool = True
    max_top_logprobs: int = Field(default=20, ge=0)


class Sampling(BaseModel):
    """Sampling parameters for a call. ``None`` means "leave to the server"."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = Field(default=None, gt=0)
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    extra_body: Mapping[str, JsonValue] | None = None
    """Provider-specific request fields merged into the request body."""

    def merged(self, override: Sampling | None) -> Sampling:
        """This sampling with every field that ``override`` sets replacing ours."""
        if override is None:
            return self
        update = override.model_dump(exclude_none=True)
        return self.model_copy(update=update) if update else self


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


@dataclass(slots=True)
class ChatResponse:
    """What a chat call returned.

    Providers build it for one attempt; the core then fills in ``usage.requests``,
    ``latency_s`` and ``queue_s`` for the whole call (mutable to spare a copy on every call).

    Attributes:
        content: The assistant's text ("" if none).
        usage: Tokens spent, requests counted (retries included).
        finish_reason: Why generation stopped (``stop``, ``length``, ...), if known.
        logprobs: Per-token log-probabilities, when requested and returned.
        latency_s: Time the server took over every attempt of the call (queueing for the
            provider's limits and retry backoff excluded).
        queue_s: Time the call waited for the provider's concurrency and rate limits.
        model: The model name the server reported.
        parsed: Filled by callers that parse ``content`` (the LLM grader does).
    """

    content: str
    usage: TokenUsage = field(default_factory=TokenUsage)
    finish_reason: str | None = None
    logprobs: tuple[TokenLogprob, ...] = ()
    latency_s: float = 0.0
    queue_s: float = 0.0
    model: str = ""
    parsed: Mapping[str, Any] | None = None


@runtime_checkable
class ChatModel(Protocol):
    """A judge backend.

    Implementations own their client and their limits; ``achat`` enforces them
    (retries, concurrency, rate limits, timeouts) and raises
    :class:`~openjudge.models.errors.ChatModelError` when a call finally fails.
    """

    @property
    def model(self) -> str: ...

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
