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
under ``full_determinism``, sends identical requests to the same replica.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import SecretStr

from openjudge.config.schema import JobConfig, ProviderSpec
from openjudge.integrations.verl.settings import config_value

__all__ = ["HOSTED_KIND", "HostedJudge", "hosted_judge_from_verl", "resolve_hosted_providers"]

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
