"""The judge VERL hosts itself: ``kind: verl`` providers in the graders YAML.

With ``reward.reward_model.enable=True``, VERL starts vLLM (or SGLang) replicas of
``reward.reward_model.model_path`` behind its own router and hands every reward worker
the router's ``host:port`` as ``reward_router_address``. A provider written as::

    providers:
      judge:
        kind: verl            # model and base_url come from VERL
        timeout_s: 60
        limits: {max_concurrency: 64}

becomes an OpenAI-compatible provider with ``base_url = http://{reward_router_address}/v1``
and ``model = reward.reward_model.model_path`` (or the ``model`` the YAML names), built
by the same code as ``kind: openai``: the YAML's timeouts, retries, limits and sampling
apply, and every request carries the sampling ``seed`` (0 unless set), so VERL's router,
under ``full_determinism``, sends identical requests to the same replica. A 500 from VERL's router that hides a
refused request is told apart from an outage (:class:`RouterTransport`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import SecretStr

from openjudge.config._build import BuiltJob
from openjudge.config._spec import JobConfig, ProviderSpec
from openjudge.integrations.scoring._guard import REFUSED_MARK
from openjudge.integrations.verl._settings import config_value
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_client import ChatClient

__all__ = [
    "HOSTED_KIND",
    "HostedJudge",
    "RouterTransport",
    "hosted_judge_from_verl",
    "resolve_hosted_providers",
    "route_through_verl",
]

HOSTED_KIND = "verl"


@dataclass(frozen=True, slots=True)
class HostedJudge:
    """Where VERL serves its reward model.

    Attributes:
        router_address: ``host:port`` of VERL's reward-model router.
        model: The model name to send (``reward.reward_model.model_path``), when known.
    """

    router_address: str
    model: str | None

    @property
    def base_url(self) -> str:
        return f"http://{self.router_address}/v1"


def hosted_judge_from_verl(
    config: object, reward_router_address: str | None, reward_model_tokenizer: object = None
) -> HostedJudge | None:
    """The hosted judge VERL passes to a reward worker, or ``None`` when it runs none.

    The model name is ``reward.reward_model.model_path`` from ``config``; without a
    config (VERL's ``naive`` manager calling :func:`~openjudge.integrations.verl.compute_score`),
    the reward-model tokenizer's ``name_or_path``.
    """
    if not reward_router_address:
        return None
    model = config_value(config, "reward", "reward_model", "model_path")
    if not isinstance(model, str) or not model:
        model = getattr(reward_model_tokenizer, "name_or_path", None)
    return HostedJudge(reward_router_address, model if isinstance(model, str) and model else None)


def _openai_spec(name: str, spec: ProviderSpec, judge: HostedJudge | None, source: str) -> ProviderSpec:
    if judge is None:
        raise ValueError(
            f"{source}: providers.{name}: kind: verl is the judge VERL serves, but this run has none: set "
            "reward.reward_model.enable=True, reward.reward_model.enable_resource_pool=True and "
            "reward.reward_model.model_path=<judge model> (see docs/verl.md, 'The judge VERL hosts')"
        )
    model = spec.model or judge.model
    if model is None:
        raise ValueError(
            f"{source}: providers.{name}: VERL passed no reward.reward_model.model_path: name the model "
            "here (model: <served model name>)"
        )
    if spec.base_url is not None:
        raise ValueError(
            f"{source}: providers.{name}: kind: verl takes its URL from VERL; remove base_url "
            "(or use kind: openai for a server of your own)"
        )
    return spec.model_copy(
        update={
            "kind": "openai",
            "model": model,
            "base_url": judge.base_url,
            "api_key": spec.api_key or SecretStr("EMPTY"),
        }
    )


def resolve_hosted_providers(config: JobConfig, judge: HostedJudge | None, *, source: str) -> JobConfig:
    """``config`` with every ``kind: verl`` provider pointed at VERL's router.

    Raises:
        ValueError: A ``kind: verl`` provider, but VERL runs no reward model (or the
            provider names its own ``base_url``); the message says what to set.
    """
    if not any(spec.kind == HOSTED_KIND for spec in config.providers.values()):
        return config
    providers = {
        name: _openai_spec(name, spec, judge, source) if spec.kind == HOSTED_KIND else spec
        for name, spec in config.providers.items()
    }
    return config.model_copy(update={"providers": providers})


class RouterTransport:
    """A ``kind: verl`` provider's transport: tells VERL's router's 500s apart.

    VERL's router (``experimental/reward_loop/router/naive_router.py``) re-raises the
    ``ClientResponseError`` of any upstream error status, and FastAPI answers it as a
    plain ``500 Internal Server Error``: a judge that refused one request (HTTP 400: the
    prompt is longer than its context) looks exactly like a judge that is down. On such a
    500 this transport sends the router a one-token probe (``ping``, ``max_tokens=1``):
    if the judge answers it, the judge is up and the request itself was refused, so the
    error is final (not retried) and marked as a refusal, which never counts toward the
    breaker (:func:`~openjudge.integrations.scoring._guard.is_outage`); otherwise it stays a retryable
    outage. A probe's answer is reused for two seconds, so an outage costs one probe per
    two seconds, not one per request. Everything else is the wrapped transport's.
    """

    def __init__(self, inner: Any, router_address: str) -> None:
        self._inner = inner
        self._probe_url = f"http://{router_address}/v1/chat/completions"
        self._probed: tuple[float, bool] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def attempt(self, request: Any, timeout_s: float) -> Any:
        try:
            return await self._inner.attempt(request, timeout_s)
        except ChatModelError as exc:
            if exc.status_code != 500 or not exc.message.endswith(_ROUTER_500) or not await self._judge_up():
                raise
            raise ChatModelError(
                f"{exc.message} {REFUSED_MARK}: VERL's router answers 500 for any upstream error status, "
                "and the judge behind it answers a one-token probe, so it refused this request "
                "(usually a prompt longer than its context); not retried",
                kind="provider_error",
                retryable=False,
                status_code=500,
                error_type=exc.error_type,
            ) from None

    async def _judge_up(self) -> bool:
        now = time.monotonic()
        if self._probed is not None and now - self._probed[0] < 2.0:
            return self._probed[1]
        body = {
            "model": self._inner.model_name,
            "messages": [{"role": "user", "content": "ping"}],
            "max_tokens": 1,
        }
        try:
            async with httpx.AsyncClient(timeout=10.0) as client:
                up = (await client.post(self._probe_url, json=body)).status_code == 200
        except httpx.HTTPError:
            up = False
        self._probed = (time.monotonic(), up)
        return up


_ROUTER_500 = "HTTP 500: Internal Server Error"
"""What our providers make of the 500 FastAPI sends when VERL's router re-raises."""


def route_through_verl(job: BuiltJob, config: JobConfig, judge: HostedJudge | None) -> None:
    """Give every provider that calls VERL's router a :class:`RouterTransport`."""
    if judge is None:
        return
    for name, provider in job.providers.items():
        spec = config.providers.get(name)
        if spec is None or spec.base_url != judge.base_url or not isinstance(provider, ChatClient):
            continue
        wrapped = RouterTransport(provider.transport, judge.router_address)
        provider.transport = wrapped  # duck-typed: every other attribute is the wrapped transport's
        provider._engine.transport = wrapped  # the engine makes each attempt through it
