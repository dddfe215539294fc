"""Judge backends: each owns an authenticated client and declares its policy.

``from openjudge.providers import OpenAIChatModel`` loads that backend only; the litellm,
Azure and transformers backends import their SDKs when first used. A job config names a
backend by ``kind`` (:mod:`openjudge.providers._registry`); ``resolve_model("vllm:qwen3-8b")``
builds one from a model string. OpenAI-compatible backends find the structured-output mode a
server takes on first use (:func:`structured_output_choice` says which; see docs/guide.md).

Imported by the application layer and integrations; never by the core (models, graders,
runner), which knows only the protocols in :mod:`openjudge.models`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openjudge._lazy import lazy_exports

if TYPE_CHECKING or not lazy_exports(globals()):
    from openjudge.providers._azure import AzureChatModel as AzureChatModel
    from openjudge.providers._litellm import LiteLLMChatModel as LiteLLMChatModel
    from openjudge.providers._negotiation import StructuredOutputChoice as StructuredOutputChoice
    from openjudge.providers._negotiation import forget_structured_output as forget_structured_output
    from openjudge.providers._negotiation import structured_output_choice as structured_output_choice
    from openjudge.providers._registry import resolve_model as resolve_model
    from openjudge.providers.openai import OpenAIChatModel as OpenAIChatModel
    from openjudge.providers.transformers import TransformersChatModel as TransformersChatModel
    from openjudge.providers.transformers import TransformersRewardModel as TransformersRewardModel
    from openjudge.providers.vllm import VLLMChatModel as VLLMChatModel
    from openjudge.providers.vllm_reward import VLLMRewardModel as VLLMRewardModel

__all__ = [
    "AzureChatModel",
    "LiteLLMChatModel",
    "OpenAIChatModel",
    "StructuredOutputChoice",
    "TransformersChatModel",
    "TransformersRewardModel",
    "VLLMChatModel",
    "VLLMRewardModel",
    "forget_structured_output",
    "resolve_model",
    "structured_output_choice",
]
