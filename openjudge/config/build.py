"""Turn a validated :class:`JobConfig` into providers, graders and a runner."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openjudge.config.loader import ConfigError
from openjudge.config.schema import AggregatorSpec, JobConfig, ProviderSpec
from openjudge.graders.base_grader import BaseGrader
from openjudge.graders.registry import BUILTIN_GRADERS
from openjudge.models.cache import JudgeCache
from openjudge.models.chat_client import ChatClient
from openjudge.models.chat_model import Sampling
from openjudge.models.limits import ConnectionLimits
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.models.reward_model import RewardModel
from openjudge.runner.aggregators import (
    Aggregator,
    GateAggregator,
    MinAggregator,
    WeightedMeanAggregator,
)
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from providers.registry import load_factory

__all__ = ["BuiltJob", "build_job", "build_provider"]


@dataclass(frozen=True, slots=True)
class BuiltJob:
    """Everything a run needs, built from a config."""

    runner: GradingRunner
    providers: Mapping[str, ChatClient]
    grader_providers: Mapping[str, str]
    """Grader name -> provider name (graders that call a provider: LLM judges, reward models)."""
    cache: JudgeCache | None = None


_LOCAL_FIELDS = (
    "device",
    "dtype",
    "max_batch_size",
    "batch_window_s",
    "max_new_tokens",
    "max_input_tokens",
    "revision",
    "trust_remote_code",
    "chat_template",
)
"""Provider fields that only ``kind: transformers`` takes."""


def build_provider(
    name: str, spec: ProviderSpec, *, limits: ConnectionLimits | None = None, cache: JudgeCache | None = None
) -> ChatClient:
    """Instantiate one provider from its spec.

    ``limits`` is shared by the providers of one job: two that reach the same endpoint with
    the same model and key share one budget. ``cache`` is used only at temperature 0.
    """
    if spec.kind == "verl" or spec.model is None:
        raise ValueError(
            "kind 'verl' is the judge VERL serves during training (integrations.verl builds it); "
            "elsewhere use kind: openai with the server's base_url and model"
        )
    factory: Callable[..., ChatClient] = load_factory(spec.kind)
    extra: dict[str, Any] = {}
    if spec.api_version is not None:
        if spec.kind not in ("azure", "litellm"):
            raise ValueError(f"api_version applies to kind 'azure' or 'litellm', not {spec.kind!r}")
        extra["api_version"] = spec.api_version
    local = {f: getattr(spec, f) for f in _LOCAL_FIELDS if getattr(spec, f) is not None}
    if local and spec.kind != "transformers":
        raise ValueError(f"{', '.join(sorted(local))} apply to kind 'transformers' only, not {spec.kind!r}")
    extra.update(local)
    policy = ProviderPolicy(
        timeout_s=spec.timeout_s,
        retry=RetryPolicy(max_attempts=spec.max_retries + 1),
        limits=spec.limits,
    )
    sampling = Sampling(
        temperature=spec.sampling.temperature,
        top_p=spec.sampling.top_p,
        max_tokens=spec.sampling.max_tokens,
        seed=spec.sampling.seed,
    )
    return factory(
        spec.model,
        api_key=spec.api_key,
        base_url=spec.base_url,
        sampling=sampling,
        structured_output=spec.structured_output,
        policy=policy,
        limits=limits,
        cache=cache if spec.sampling.temperature == 0 else None,
        **extra,
    )


def _reward_model(
    provider: ChatClient, spec: ProviderSpec, *, limits: ConnectionLimits | None = None
) -> RewardModel:
    """The reward model a ``reward_model`` grader scores with, from its provider.

    ``transformers``: the same checkpoint settings, loaded as a sequence classifier (once per
    provider); ``vllm``: the server's ``/classify`` endpoint, under the provider's policy.

    Raises:
        ValueError: Any other kind.
    """
    if spec.kind == "transformers":
        from providers.transformers import TransformersChatModel

        if isinstance(provider, TransformersChatModel):
            return provider.reward_model()
    if spec.kind == "vllm":
        from providers.vllm import VLLMChatModel
        from providers.vllm_reward import RewardModelClient

        if isinstance(provider, VLLMChatModel):
            return RewardModelClient(
                provider.base_url, spec.model, api_key=spec.api_key, policy=provider.policy, limits=limits
            )
    raise ValueError(
        f"reward_model graders need a provider of kind 'transformers' (in process) or 'vllm' "
        f"(its /classify endpoint), not {spec.kind!r}"
    )


def _params(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Constructor arguments from YAML: lists become tuples for ``score_range``, and a
    ``sampling`` mapping becomes a :class:`Sampling` (validated, so typos are reported)."""
    params = dict(raw)
    if isinstance(params.get("score_range"), list):
        params["score_range"] = tuple(params["score_range"])
    if isinstance(params.get("sampling"), Mapping):
        params["sampling"] = Sampling.model_validate(params["sampling"])
    return params


def _aggregator(spec: AggregatorSpec) -> Aggregator:
    if spec.type == "weighted_mean":
        return WeightedMeanAggregator(spec.name or "weighted_mean", spec.weights, on_error=spec.on_error)
    if spec.type == "min":
        return MinAggregator(spec.name or "min")
    inner = WeightedMeanAggregator(weights=spec.weights, on_error=spec.on_error)
    return GateAggregator(spec.gates or {}, inner, name=spec.name or "gate", fail_score=spec.fail_score)


def _cache(config: JobConfig, base_dir: Path | None) -> JudgeCache | None:
    if not config.cache.enabled or not any(p.sampling.temperature == 0 for p in config.providers.values()):
        return None
    if config.cache.path is None:
        return JudgeCache()
    path = Path(config.cache.path)
    return JudgeCache(path if path.is_absolute() or base_dir is None else base_dir / path)


def build_job(
    config: JobConfig,
    *,
    source: str = "<config>",
    show_progress: bool = False,
    base_dir: Path | None = None,
    use_cache: bool = True,
) -> BuiltJob:
    """Build providers (one object per named provider, shared by its graders) and the runner.

    Raises:
        ConfigError: A grader's parameters do not fit its constructor (the message says which).
    """
    providers: dict[str, ChatClient] = {}
    problems: list[str] = []
    cache = _cache(config, base_dir) if use_cache else None
    limits = ConnectionLimits()
    for name, spec in config.providers.items():
        try:
            providers[name] = build_provider(name, spec, limits=limits, cache=cache)
        except (TypeError, ValueError, ImportError) as exc:  # an ImportError names the extra to install
            problems.append(f"{source}: providers.{name}: {exc}")
    configs: dict[str, GraderConfig] = {}
    grader_providers: dict[str, str] = {}
    reward_models: dict[str, RewardModel] = {}  # one per provider, shared by its graders
    for name, gspec in config.graders.items():
        entry = BUILTIN_GRADERS[gspec.type]
        if entry.kind == "llm" and (gspec.provider is None or gspec.provider not in providers):
            continue  # its provider failed to build; already reported
        try:
            params = _params(gspec.params)
            if gspec.type == "reward_model" and gspec.provider is not None:
                if gspec.provider not in reward_models:
                    reward_models[gspec.provider] = _reward_model(
                        providers[gspec.provider], config.providers[gspec.provider], limits=limits
                    )
                params["client"] = reward_models[gspec.provider]
                grader_providers[name] = gspec.provider
            elif entry.kind == "llm" and gspec.provider is not None:
                params["model"] = providers[gspec.provider]
                grader_providers[name] = gspec.provider
                if gspec.type == "llm":
                    params.setdefault("name", name)
            grader: BaseGrader = entry.load()(**params)
            configs[name] = GraderConfig(grader, gspec.mapper)
        except (TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            problems.append(f"{source}: graders.{name}.params: cannot build {gspec.type!r}: {exc}")
    if problems:
        raise ConfigError(problems)
    try:
        runner = GradingRunner(
            configs,
            max_concurrency=config.runner.max_concurrency,
            aggregators=[_aggregator(a) for a in config.aggregators],
            show_progress=show_progress,
            timeout=config.runner.timeout_s,
            deadline=config.runner.deadline_s,
        )
    except ValueError as exc:
        raise ConfigError([f"{source}: graders: {exc}"]) from None
    return BuiltJob(runner=runner, providers=providers, grader_providers=grader_providers, cache=cache)
