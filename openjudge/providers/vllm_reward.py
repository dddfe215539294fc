"""Reward-model scoring on a vLLM pooling server (``/classify`` and ``/pooling``).

A frozen reward model (e.g. ``Skywork/Skywork-Reward-V2-Qwen3-0.6B`` served with
``vllm serve ... --runner pooling --convert classify``) scores a response in one
forward pass, with no generation and nothing to parse. :class:`VLLMRewardModel`
implements the core's :class:`~openjudge.models.reward_model.RewardModel`; the
core's :class:`~openjudge.graders.reward_model.RewardModelGrader` turns it into a grader.

The conversation is sent as chat ``messages`` (vLLM applies the model's chat
template): ``[user: prompt, assistant: response]``, or ``messages`` followed by the
response; with neither, the response alone is sent as ``input``. Outputs:

* ``/classify`` returns ``probs`` per sequence; raw rewards need
  ``use_activation=False`` (the default here; vLLM would otherwise apply softmax/sigmoid);
* ``/pooling`` returns ``data``: one row per sequence (``task="classify"``) or one row
  per token (``task="token_classify"``: token and process reward models), reduced
  over tokens by ``token_reduce``.

Calls go through the core's engine around a pooling transport, so timeouts, bounded
retries, Retry-After, concurrency and RPM limits, and usage all work as for judges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import SecretStr

from openjudge.models._limits import ConnectionLimits
from openjudge.models._secrets import safe_url
from openjudge.models.engine import CallEngine
from openjudge.models.policy import ProviderPolicy
from openjudge.models.reward_model import Reward
from openjudge.providers._http import HttpClientFactory
from openjudge.providers._pooling import PoolingReply, PoolingTransport, RewardEndpoint, TokenReduce
from openjudge.providers._reward import scored_conversation
from openjudge.providers.vllm import normalize_base_url, vllm_api_key
from openjudge.results import TokenUsage

__all__ = ["RewardEndpoint", "TokenReduce", "VLLMRewardModel"]


class VLLMRewardModel:
    """Scores responses with a reward model served by vLLM (a :class:`~openjudge.models.RewardModel`).

    Args:
        base_url: The server, e.g. ``http://localhost:8000/v1`` or its root; the
            endpoints are at the root (``/classify``, ``/pooling``).
        model: The served model name; ``None`` lets the server use its only model.
        api_key: The server's ``--api-key``; defaults to ``VLLM_API_KEY``, else no key.
        endpoint: ``classify`` (sequence reward models) or ``pooling``.
        task: The ``/pooling`` task: ``classify`` or ``token_classify`` (token and
            process reward models).
        label_index: Which output label is the reward (0 for single-score models).
        use_activation: ``False`` (default) returns raw rewards; ``None`` keeps the
            server's default (usually softmax/sigmoid).
        token_reduce: How per-token rewards become one: ``last`` (outcome models),
            ``min`` or ``mean`` (process reward models).
        policy: Timeouts, retries and limits.
        limits: Shared limits (see :class:`~openjudge.models._limits.ConnectionLimits`).
        http_client_factory: Builds each ``httpx.AsyncClient`` (tests inject transports).
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | SecretStr | None = None,
        endpoint: RewardEndpoint = "classify",
        task: Literal["classify", "token_classify"] = "classify",
        label_index: int = 0,
        use_activation: bool | None = False,
        token_reduce: TokenReduce = "last",
        policy: ProviderPolicy | None = None,
        limits: ConnectionLimits | None = None,
        http_client_factory: HttpClientFactory | None = None,
    ) -> None:
        if endpoint not in ("classify", "pooling"):
            raise ValueError(f"endpoint must be 'classify' or 'pooling', got {endpoint!r}")
        if token_reduce not in ("last", "min", "mean"):
            raise ValueError(f"token_reduce must be 'last', 'min' or 'mean', got {token_reduce!r}")
        if label_index < 0:
            raise ValueError(f"label_index must be >= 0, got {label_index}")
        policy = policy or ProviderPolicy()
        self.server_url = normalize_base_url(base_url).removesuffix("/v1")
        self._model_name = model
        self.endpoint: RewardEndpoint = endpoint
        self.task = task
        self.use_activation = use_activation
        transport = PoolingTransport(
            f"{self.server_url}/{endpoint}",
            model or "",
            vllm_api_key(api_key),
            endpoint=endpoint,
            label_index=label_index,
            token_reduce=token_reduce,
            max_connections=policy.limits.max_concurrency,
            http_client_factory=http_client_factory,
        )
        self._engine: CallEngine[Mapping[str, Any], PoolingReply] = CallEngine(
            transport, policy, limits=limits
        )

    @property
    def model_name(self) -> str | None:
        """The served model name (``None``: the server's only model)."""
        return self._model_name

    @property
    def policy(self) -> ProviderPolicy:
        return self._engine.policy

    @property
    def usage(self) -> TokenUsage:
        """Tokens and requests spent so far."""
        return self._engine.usage

    def request_body(
        self, response: str, *, prompt: str | None = None, messages: Sequence[Mapping[str, Any]] | None = None
    ) -> dict[str, Any]:
        """The JSON body for scoring ``response`` (useful for inspection and tests)."""
        conversation = scored_conversation(response, prompt=prompt, messages=messages)
        body: dict[str, Any] = {}
        if self._model_name is not None:
            body["model"] = self._model_name
        if conversation is not None:
            body["messages"] = conversation
        else:
            body["input"] = response
        if self.endpoint == "pooling":
            body["task"] = self.task
        if self.use_activation is not None:
            body["use_activation"] = self.use_activation
        return body

    async def ascore(
        self, response: str, *, prompt: str | None = None, messages: Sequence[Mapping[str, Any]] | None = None
    ) -> Reward:
        """The reward for ``response`` (after ``prompt`` or ``messages``, if given).

        Raises:
            ChatModelError: The call failed after the policy's retries, or the reply had no score.
            InvalidInputError: Both ``prompt`` and ``messages`` were given.
        """
        outcome = await self._engine.call(self.request_body(response, prompt=prompt, messages=messages))
        reply = outcome.response
        value, *values = reply.scores
        usage = TokenUsage(reply.usage.prompt_tokens, 0, outcome.requests)
        return Reward(value, tuple(values), reply.model, usage, outcome.latency_s)

    async def aclose(self) -> None:
        """Close the HTTP client of the running loop."""
        await self._engine.transport.aclose()

    def __repr__(self) -> str:
        return (
            f"VLLMRewardModel(server_url={safe_url(self.server_url)!r}, endpoint={self.endpoint!r}, "
            f"model={self._model_name!r})"
        )
