"""What a judge call is made of: messages, prompt templates, the chat- and reward-model
protocols, sampling, the call policy (retries, limits) and the response.

Backends that implement these protocols are in :mod:`openjudge.providers`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openjudge._lazy import lazy_attribute

if TYPE_CHECKING:
    from openjudge.models._errors import ChatModelError as ChatModelError
    from openjudge.models.cache import JudgeCache as JudgeCache
    from openjudge.models.chat_client import ChatClient as ChatClient
    from openjudge.models.chat_model import ChatModel as ChatModel
    from openjudge.models.chat_model import ChatRequest as ChatRequest
    from openjudge.models.chat_model import ChatResponse as ChatResponse
    from openjudge.models.chat_model import Sampling as Sampling
    from openjudge.models.policy import ProviderLimits as ProviderLimits
    from openjudge.models.policy import ProviderPolicy as ProviderPolicy
    from openjudge.models.policy import RetryPolicy as RetryPolicy
    from openjudge.models.reward_model import Reward as Reward
    from openjudge.models.reward_model import RewardModel as RewardModel
    from openjudge.models.schema.oai.message import ChatMessage as ChatMessage
    from openjudge.models.schema.prompt_template import LanguageEnum as LanguageEnum
    from openjudge.models.schema.prompt_template import PromptTemplate as PromptTemplate
    from openjudge.models.transport import ChatTransport as ChatTransport

__all__ = [
    "ChatClient",
    "ChatMessage",
    "ChatModel",
    "ChatModelError",
    "ChatRequest",
    "ChatResponse",
    "ChatTransport",
    "JudgeCache",
    "LanguageEnum",
    "PromptTemplate",
    "ProviderLimits",
    "ProviderPolicy",
    "RetryPolicy",
    "Reward",
    "RewardModel",
    "Sampling",
]

_LAZY = {
    "ChatClient": "openjudge.models.chat_client",
    "ChatMessage": "openjudge.models.schema.oai.message",
    "ChatModel": "openjudge.models.chat_model",
    "ChatModelError": "openjudge.models._errors",
    "ChatRequest": "openjudge.models.chat_model",
    "ChatResponse": "openjudge.models.chat_model",
    "ChatTransport": "openjudge.models.transport",
    "JudgeCache": "openjudge.models.cache",
    "LanguageEnum": "openjudge.models.schema.prompt_template",
    "PromptTemplate": "openjudge.models.schema.prompt_template",
    "ProviderLimits": "openjudge.models.policy",
    "ProviderPolicy": "openjudge.models.policy",
    "RetryPolicy": "openjudge.models.policy",
    "Reward": "openjudge.models.reward_model",
    "RewardModel": "openjudge.models.reward_model",
    "Sampling": "openjudge.models.chat_model",
}


def __getattr__(name: str) -> object:
    return lazy_attribute(globals(), _LAZY, name)
