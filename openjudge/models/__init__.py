"""What a judge call is made of: messages, prompt templates, the chat- and reward-model
protocols, sampling, the call policy (retries, limits) and the response.

Backends that implement these protocols are in :mod:`openjudge.providers`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openjudge._lazy import lazy_exports
from openjudge.errors import ChatModelError as ChatModelError

if TYPE_CHECKING or not lazy_exports(globals()):
    from openjudge.models.cache import JudgeCache as JudgeCache
    from openjudge.models.chat_client import ChatClient as ChatClient
    from openjudge.models.chat_model import ChatModel as ChatModel
    from openjudge.models.chat_model import ChatRequest as ChatRequest
    from openjudge.models.chat_model import ChatResponse as ChatResponse
    from openjudge.models.chat_model import ModelCapabilities as ModelCapabilities
    from openjudge.models.chat_model import Sampling as Sampling
    from openjudge.models.chat_model import TokenLogprob as TokenLogprob
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
    "ModelCapabilities",
    "PromptTemplate",
    "ProviderLimits",
    "ProviderPolicy",
    "RetryPolicy",
    "Reward",
    "RewardModel",
    "Sampling",
    "TokenLogprob",
]
