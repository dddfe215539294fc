"""Resolve a model string to a chat model through one explicit table of lazy factories.

Model strings are ``kind:model``, optionally ``@base_url``::

    openai:gpt-4o-mini
    vllm:Qwen/Qwen3-8B@http://host:8000/v1
    vllm:@http://host:8000/v1             (the served model is discovered)
    azure:my-deployment
    litellm:anthropic/claude-sonnet-4-5
    transformers:Qwen/Qwen3-0.6B          (runs in this process on torch)

The table maps each kind to ``"module:factory"``; the module is imported only when a
string of that kind is resolved, so importing this module imports no SDK. Config
files use the same table (``PROVIDER_FACTORIES``), and every factory accepts the
same keywords (``api_key``, ``base_url``, ``sampling``, ``policy``, ``structured_output``,
``limits``, ``cache``).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from openjudge.models.chat_client import ChatClient

__all__ = ["PROVIDER_FACTORIES", "ModelSpec", "load_factory", "parse_model_spec", "resolve_model"]

PROVIDER_FACTORIES: Mapping[str, str] = MappingProxyType(
    {
        "openai": "openjudge.providers.openai:OpenAIChatModel",
        "vllm": "openjudge.providers.vllm:VLLMChatModel",
        "azure": "openjudge.providers._azure:AzureChatModel",
        "litellm": "openjudge.providers._litellm:LiteLLMChatModel",
        "transformers": "openjudge.providers.transformers:TransformersChatModel",
    }
)
"""Provider kind -> ``"module:factory"``; the factory's first argument is the model name."""

_MODEL_OPTIONAL = frozenset({"vllm"})  # discovers the served model when none is named
_EXAMPLES = "'openai:gpt-4o-mini', 'vllm:Qwen/Qwen3-8B@http://host:8000/v1', 'litellm:anthropic/<model>'"


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A parsed model string.

    Attributes:
        kind: A key of :data:`PROVIDER_FACTORIES`.
        model: The model name for that kind (``None``: discover it, vLLM only).
        base_url: The server URL given after ``@``, if any.
    """

    kind: str
    model: str | None
    base_url: str | None = None


def _unknown_kind(kind: str, spec: str) -> ValueError:
    close = difflib.get_close_matches(kind.lower(), list(PROVIDER_FACTORIES), n=1, cutoff=0.5)
    hint = f" Did you mean {close[0]!r} ({close[0]}:...)?" if close else ""
    kinds = ", ".join(repr(k) for k in PROVIDER_FACTORIES)
    return ValueError(
        f"unknown provider kind {kind!r} in {spec!r}.{hint} Known kinds: {kinds}; "
        "any other litellm route is 'litellm:<route>/<model>'"
    )


def parse_model_spec(spec: str) -> ModelSpec:
    """Split ``kind:model[@base_url]``.

    Raises:
        ValueError: No kind, an unknown kind (with a "did you mean"), or no model.
    """
    kind, colon, rest = spec.strip().partition(":")
    if not colon or not kind or "/" in kind:
        raise ValueError(f"model string {spec!r} needs a provider kind: write 'kind:model', e.g. {_EXAMPLES}")
    key = kind.lower()
    if key not in PROVIDER_FACTORIES:
        raise _unknown_kind(kind, spec)
    model, base_url = rest, None
    for scheme in ("@http://", "@https://"):
        at = rest.rfind(scheme)
        if at >= 0:
            # Only "@http(s)://" starts a URL: model names may contain "@" (e.g. "model@2024-06-20").
            model, base_url = rest[:at], rest[at + 1 :]
            break
    if not model and key not in _MODEL_OPTIONAL:
        raise ValueError(f"model string {spec!r} names no model: write '{key}:<model>', e.g. {_EXAMPLES}")
    return ModelSpec(kind=key, model=model or None, base_url=base_url)


def load_factory(kind: str) -> Callable[..., ChatClient]:
    """The factory for ``kind``, importing its module now.

    Raises:
        ValueError: Unknown kind (with a "did you mean").
        ImportError: The kind's optional SDK is missing (the message names the extra).
    """
    target = PROVIDER_FACTORIES.get(kind)
    if target is None:
        raise _unknown_kind(kind, kind)
    module_name, _, attr = target.partition(":")
    factory: Callable[..., ChatClient] = getattr(importlib.import_module(module_name), attr)
    return factory


def resolve_model(spec: str, **overrides: object) -> ChatClient:
    """The chat model a model string names, built with ``overrides`` as keyword arguments.

    Example:
        >>> from openjudge.models.chat_model import Sampling
        >>> judge = resolve_model("vllm:Qwen/Qwen3-8B@http://localhost:8000/v1", sampling=Sampling(temperature=0))

    Raises:
        ValueError: A malformed string, an unknown kind, a ``base_url`` given twice
            with different values, or a constructor argument the provider rejects.
        ImportError: The kind's optional SDK is missing.
    """
    parsed = parse_model_spec(spec)
    kwargs = dict(overrides)
    if parsed.base_url is not None:
        given = kwargs.get("base_url")
        if given is not None and given != parsed.base_url:
            raise ValueError(f"{spec!r} names base_url {parsed.base_url!r} but base_url={given!r} was passed")
        kwargs["base_url"] = parsed.base_url
    return load_factory(parsed.kind)(parsed.model, **kwargs)
