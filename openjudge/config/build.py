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
from openjudge.models.base_chat_model import BaseChatModel
from openjudge.models.cache import JudgeCache
from openjudge.models.chat_model import Sampling
from openjudge.models.policy import ProviderPolicy, RetryPolicy
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
    providers: Mapping[str, BaseChatModel]
    grader_providers: Mapping[str, str]
    """Grader name -> provider name (LLM graders only)."""
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


def build_provider(name: str, spec: ProviderSpec) -> BaseChatModel:
    """Instantiate one provider from its spec."""
    factory: Callable[..., BaseChatModel] = load_factory(spec.kind)
    extra: dict[str, Any] = {}
    if spec.api_version is not None:
        if spec.kind not in ("azure", "litellm"):
            raise ValueError(f"api_version applies to kind 'azure' or 'litellm', not {spec.kind!r}")
        extra["api_version"] = spec.api_version
    policy = ProviderPolicy(
        timeout_s=spec.timeout_s,
        retry=RetryPolicy(max_attempts=spec.max_retries + 1),
        limits=spec.limits,
    )
    local = {f: getattr(spec, f) for f in _LOCAL_FIELDS if getattr(spec, f) is not None}
    if spec.kind == "transformers":
        if spec.base_url is not None or spec.api_key is not None:
            raise ValueError(
                "kind 'transformers' runs the model in this process: remove base_url and api_key"
            )
        if spec.structured_output == "json_object":
            raise ValueError("kind 'transformers' takes structured_output 'json_schema' or 'prompt'")
        sampling = spec.sampling
        return factory(
            spec.model,
            sampling=Sampling(
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                max_tokens=sampling.max_tokens,
                seed=sampling.seed,
            ),
            policy=policy,
            structured_output=spec.structured_output,
            **local,
        )
    if local:
        raise ValueError(f"{', '.join(sorted(local))} apply to kind 'transformers' only, not {spec.kind!r}")
    return factory(
        spec.model,
        api_key=spec.api_key,
        base_url=spec.base_url,
        temperature=spec.sampling.temperature,
        top_p=spec.sampling.top_p,
        max_tokens=spec.sampling.max_tokens,
        seed=spec.sampling.seed,
        structured_output=spec.structured_output,
        policy=policy,
        **extra,
    )


def _reward_model(provider: BaseChatModel, spec: ProviderSpec) -> object:
    """The reward-model client a ``reward_model`` grader scores with, for its provider."""
    if spec.kind == "transformers":
        from providers.transformers import TransformersChatModel

        assert isinstance(provider, TransformersChatModel)  # what build_provider makes of this kind
        return provider.reward_model()
    if spec.kind == "vllm":
        if spec.base_url is None:
            raise ValueError("a vllm provider for reward_model graders needs base_url (the server's /v1 URL)")
        from providers.vllm_reward import RewardModelClient

        return RewardModelClient(spec.base_url, spec.model, api_key=spec.api_key, policy=provider.policy)
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
    providers: dict[str, BaseChatModel] = {}
    problems: list[str] = []
    cache = _cache(config, base_dir) if use_cache else None
    for name, spec in config.providers.items():
        try:
            providers[name] = build_provider(name, spec).with_cache(
                cache if spec.sampling.temperature == 0 else None
            )
        except (TypeError, ValueError, ImportError) as exc:  # an ImportError names the extra to install
            problems.append(f"{source}: providers.{name}: {exc}")
    configs: dict[str, GraderConfig] = {}
    grader_providers: dict[str, str] = {}
    reward_models: dict[str, object] = {}  # one client per provider, shared by its graders
    for name, gspec in config.graders.items():
        entry = BUILTIN_GRADERS[gspec.type]
        if entry.kind == "llm" and (gspec.provider is None or gspec.provider not in providers):
            continue  # its provider failed to build; already reported
        try:
            params = _params(gspec.params)
            if gspec.type == "reward_model" and gspec.provider is not None:
                if gspec.provider not in reward_models:
                    reward_models[gspec.provider] = _reward_model(
                        providers[gspec.provider], config.providers[gspec.provider]
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
