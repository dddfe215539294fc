"""Reward-model scoring on a vLLM pooling server (``/classify`` and ``/pooling``).

A frozen reward model (e.g. ``Skywork/Skywork-Reward-V2-Qwen3-0.6B`` served with
``vllm serve ... --runner pooling --convert classify``) scores a response in one
forward pass, with no generation and nothing to parse. :class:`RewardModelClient`
makes the call; :class:`RewardModelGrader` turns it into a :class:`GraderScore`.

The conversation is sent as chat ``messages`` (vLLM applies the model's chat
template): ``[user: prompt, assistant: response]``, or ``messages`` followed by the
response; with neither, the response alone is sent as ``input``. Outputs:

* ``/classify`` returns ``probs`` per sequence; raw rewards need
  ``use_activation=False`` (the default here; vLLM would otherwise apply softmax/sigmoid);
* ``/pooling`` returns ``data``: one row per sequence (``task="classify"``) or one row
  per token (``task="token_classify"``: token and process reward models), reduced
  over tokens by ``token_reduce``.

Calls go through the core's retry/limit engine (:mod:`providers._pooling`), so
timeouts, bounded retries, Retry-After, concurrency and RPM limits, and usage all
work as for judges.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import JsonValue, SecretStr

from openjudge.graders.base_grader import BaseGrader, InvalidInputError, grader_boundary
from openjudge.graders.schema import GraderError, GraderScore, ScoreRange
from openjudge.models.chat_model import Sampling
from openjudge.models.errors import ChatModelError
from openjudge.models.policy import ProviderPolicy
from openjudge.models.usage import TokenUsage
from providers._pooling import PoolingTransport, RewardEndpoint, TokenReduce
from providers.openai import HttpClientFactory
from providers.vllm import _key, normalize_base_url

__all__ = ["Reward", "RewardEndpoint", "RewardModelClient", "RewardModelGrader", "RewardScorer"]


@dataclass(frozen=True, slots=True)
class Reward:
    """One reward-model score.

    Attributes:
        value: The reward (``values`` at ``label_index``, reduced over tokens if per-token).
        values: The row it came from (per label), or per-token values for token models.
        model: The model the server reported.
        usage: Prompt tokens and requests spent.
        latency_s: Wall time of the call, retries included.
    """

    value: float
    values: tuple[float, ...]
    model: str
    usage: TokenUsage
    latency_s: float


class RewardScorer(Protocol):
    """What :class:`RewardModelGrader` scores with: this module's vLLM client, or an
    in-process model (:class:`providers.transformers.TransformersRewardModel`)."""

    async def ascore(
        self, response: str, *, prompt: str | None = None, messages: Sequence[Mapping[str, Any]] | None = None
    ) -> Reward: ...


class RewardModelClient:
    """Scores responses with a reward model served by vLLM.

    Args:
        base_url: The server, e.g. ``http://localhost:8000/v1`` or its root; the
            endpoints are at the root (``/classify``, ``/pooling``).
        model: The served model name; ``None`` lets the server use its only model.
        api_key: The server's ``--api-key``; defaults to ``VLLM_API_KEY``, else ``"EMPTY"``.
        endpoint: ``classify`` (sequence reward models) or ``pooling``.
        task: The ``/pooling`` task: ``classify`` or ``token_classify`` (token and
            process reward models).
        label_index: Which output label is the reward (0 for single-score models).
        use_activation: ``False`` (default) returns raw rewards; ``None`` keeps the
            server's default (usually softmax/sigmoid).
        token_reduce: How per-token rewards become one: ``last`` (outcome models),
            ``min`` or ``mean`` (process reward models).
        timeout, max_retries, max_concurrency, rpm: As for chat models.
        policy: A full policy; when given, ``timeout``/``max_retries``/limits are ignored.
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
        timeout: float = 60.0,
        max_retries: int | None = None,
        max_concurrency: int = 64,
        rpm: float | None = None,
        policy: ProviderPolicy | None = None,
        http_client_factory: HttpClientFactory | None = None,
    ) -> None:
        if endpoint not in ("classify", "pooling"):
            raise ValueError(f"endpoint must be 'classify' or 'pooling', got {endpoint!r}")
        if token_reduce not in ("last", "min", "mean"):
            raise ValueError(f"token_reduce must be 'last', 'min' or 'mean', got {token_reduce!r}")
        if label_index < 0:
            raise ValueError(f"label_index must be >= 0, got {label_index}")
        if policy is None:
            policy = ProviderPolicy.from_options(
                timeout=timeout, max_retries=max_retries, max_concurrency=max_concurrency, rpm=rpm
            )
        self.server_url = normalize_base_url(base_url).removesuffix("/v1")
        self.model = model
        self.endpoint: RewardEndpoint = endpoint
        self.task = task
        self.use_activation = use_activation
        self._transport = PoolingTransport(
            f"{self.server_url}/{endpoint}",
            model or "(served model)",
            _key(api_key),
            endpoint=endpoint,
            label_index=label_index,
            token_reduce=token_reduce,
            policy=policy,
            http_client_factory=http_client_factory,
        )

    @property
    def usage(self) -> TokenUsage:
        """Tokens and requests spent so far."""
        return self._transport.usage

    def request_body(
        self, response: str, *, prompt: str | None = None, messages: Sequence[Mapping[str, Any]] | None = None
    ) -> dict[str, Any]:
        """The JSON body for scoring ``response`` (useful for inspection and tests)."""
        if prompt is not None and messages is not None:
            raise InvalidInputError("give either 'prompt' or 'messages', not both")
        body: dict[str, Any] = {}
        if self.model is not None:
            body["model"] = self.model
        if messages is not None:
            body["messages"] = [*(dict(m) for m in messages), {"role": "assistant", "content": response}]
        elif prompt is not None:
            body["messages"] = [
                {"role": "user", "content": prompt},
                {"role": "assistant", "content": response},
            ]
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
        body = self.request_body(response, prompt=prompt, messages=messages)
        reply = await self._transport.achat([body], sampling=Sampling())
        value, *values = json.loads(reply.content)
        return Reward(float(value), tuple(values), reply.model, reply.usage, reply.latency_s)

    async def aclose(self) -> None:
        """Close the HTTP client of the running loop."""
        await self._transport.aclose()

    def __repr__(self) -> str:
        return f"RewardModelClient(server_url={self.server_url!r}, endpoint={self.endpoint!r}, model={self.model!r})"


class RewardModelGrader(BaseGrader):
    """A grader whose score is a reward model's raw output.

    Args:
        client: The reward model: a vLLM client or an in-process model (shared by every
            grader that uses it).
        name: Result name (default ``reward_model``).
        score_range: The declared range of the reward, if known; a reward outside it is
            a ``parse_error`` unless ``clip_to_range``.
        clip_to_range: Clip rewards into ``score_range`` instead of failing.
    """

    default_name = "reward_model"

    def __init__(
        self,
        client: RewardScorer,
        name: str = "",
        description: str = "",
        *,
        score_range: ScoreRange | tuple[float, float] | None = None,
        clip_to_range: bool = False,
    ) -> None:
        super().__init__(name=name, description=description, score_range=score_range)
        if clip_to_range and self.score_range is None:
            raise ValueError(f"{self.name}: clip_to_range needs a score_range")
        self.client = client
        self.clip_to_range = clip_to_range

    @grader_boundary
    async def aevaluate(
        self,
        *,
        response: str,
        prompt: str | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
    ) -> GraderScore | GraderError:
        """Score ``response`` (optionally after ``prompt`` or a conversation in ``messages``)."""
        if not isinstance(response, str):
            raise InvalidInputError(f"input 'response' must be a string, got {type(response).__name__}")
        try:
            reward = await self.client.ascore(response, prompt=prompt, messages=messages)
        except ChatModelError as exc:
            return GraderError(
                name=self.name,
                kind=exc.kind,
                message=exc.message,
                error_type=exc.error_type,
                usage=TokenUsage(0, 0, exc.requests),
            )
        return self._result(reward)

    def _result(self, reward: Reward) -> GraderScore | GraderError:
        value, score_range = reward.value, self.score_range
        metadata: dict[str, JsonValue] = {"raw_reward": value, "model": reward.model}
        if len(reward.values) > 1:
            metadata["values"] = list(reward.values)
        if score_range is not None and not score_range.contains(value):
            if not self.clip_to_range:
                return GraderError(
                    name=self.name,
                    kind="parse_error",
                    message=f"reward {value:g} is outside the declared score_range "
                    f"[{score_range.low:g}, {score_range.high:g}]; widen it or set clip_to_range=True",
                    error_type="OutOfRange",
                    usage=reward.usage,
                    latency_s=reward.latency_s,
                )
            value = min(score_range.high, max(score_range.low, value))
        return GraderScore(
            name=self.name,
            score=value,
            reason=f"reward model {reward.model}",
            metadata=metadata,
            score_range=score_range,
            usage=reward.usage,
            latency_s=reward.latency_s,
        )
