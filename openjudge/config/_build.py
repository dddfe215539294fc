"""Turn a validated :class:`JobConfig` into providers, graders and a runner.

Problems found while building (a parameter a grader does not take, a score range an
aggregator needs, a provider that cannot be constructed) are reported all at once, as
``file:line: field: message`` lines of one :class:`~openjudge.config._loader.ConfigError`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openjudge.config._custom import grader_class, is_import_path, load_class
from openjudge.config._loader import ConfigError
from openjudge.config._locations import Located
from openjudge.config._params import grader_arguments
from openjudge.config._spec import PROVIDER_KINDS, AggregatorSpec, JobConfig, ProviderSpec
from openjudge.graders.base_grader import BaseGrader
from openjudge.graders.blame import set_response_failure_score
from openjudge.models._limits import ConnectionLimits
from openjudge.models.cache import JudgeCache
from openjudge.models.chat_client import ChatClient
from openjudge.models.chat_model import Sampling
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.models.reward_model import RewardModel
from openjudge.providers._registry import load_factory
from openjudge.results import GraderMode, GraderResult, ScoreRange
from openjudge.runner._grader_config import BoundGrader
from openjudge.runner._mapper import Mapper, MissingFieldError
from openjudge.runner.aggregators import (
    Aggregator,
    GateAggregator,
    MinAggregator,
    WeightedMeanAggregator,
    mixed_graders,
)
from openjudge.runner.grading_runner import GraderConfig, GradingRunner

__all__ = ["BuiltJob", "build_job", "build_provider"]


@dataclass(frozen=True, slots=True)
class BuiltJob:
    """Everything a run needs, built from a config."""

    runner: GradingRunner
    providers: Mapping[str, ChatClient]
    grader_providers: Mapping[str, str]
    """Grader name -> provider name (graders that call a provider: LLM judges, reward models)."""
    cache: JudgeCache | None = None


def build_provider(
    name: str,
    spec: ProviderSpec,
    *,
    limits: ConnectionLimits | None = None,
    cache: JudgeCache | None = None,
    runner_concurrency: int | None = None,
) -> ChatClient:
    """Instantiate one provider from its spec (kind-specific fields per :data:`PROVIDER_KINDS`).

    ``limits`` is shared by the providers of one job: two that reach the same endpoint with
    the same model and key share one budget. ``cache`` is used only at temperature 0. A
    provider whose ``limits.max_concurrency`` is not set follows ``runner_concurrency``
    when that is higher: the runner's setting is what the config asked for.
    """
    if spec.kind == "verl" or spec.model is None:
        raise ValueError(
            "kind 'verl' is the judge VERL serves during training (openjudge.integrations.verl builds it); "
            "elsewhere use kind: openai with the server's base_url and model"
        )
    factory: Callable[..., ChatClient] = load_factory(spec.kind)
    extra: dict[str, Any] = {}
    for field in PROVIDER_KINDS[spec.kind].fields:
        value = getattr(spec, field)
        if value is not None:
            extra[field] = value
    provider_limits = spec.limits
    if (
        runner_concurrency is not None
        and "max_concurrency" not in provider_limits.model_fields_set
        and runner_concurrency > provider_limits.max_concurrency
    ):
        provider_limits = provider_limits.model_copy(update={"max_concurrency": runner_concurrency})
    policy = ProviderPolicy(
        timeout_s=spec.timeout_s,
        retry=RetryPolicy(max_attempts=spec.max_retries + 1),
        limits=provider_limits,
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


class UnmappedInputError(MissingFieldError):
    """A grader input a sample lacks, for a grader without a mapper (worded for YAML)."""

    def __init__(self, field: str, grader: str) -> None:
        super().__init__(field, field)
        self.grader = grader

    def __str__(self) -> str:
        return (
            f"sample has no field {self.path!r}: add it to the data, or map it from another field "
            f"with graders.{self.grader}.mapper: {{{self.path}: <field>}}"
        )


def _same_named(grader: BaseGrader, key: str) -> Mapper:
    """The mapper of a grader without one: its inputs are the sample's same-named fields."""
    required = sorted(grader.input_spec().required)

    def inputs(sample: Mapping[str, Any]) -> Mapping[str, Any]:
        if isinstance(sample, Mapping):
            for name in required:
                if name not in sample:
                    raise UnmappedInputError(name, key)
        return sample

    return inputs


def _provider_problem(name: str, exc: Exception) -> str:
    """Why a provider could not be built, worded for a config (not for Python callers)."""
    text = str(exc)
    if "api_key=" in text:  # the Python API's "pass api_key=..." advice
        return (
            f"no API key: set providers.{name}.api_key (e.g. api_key: ${{OPENAI_API_KEY}}); "
            "for a local server also set base_url"
        )
    return text


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
        from openjudge.providers.transformers import TransformersChatModel

        if isinstance(provider, TransformersChatModel):
            return provider.reward_model()
    if spec.kind == "vllm":
        from openjudge.providers.vllm import VLLMChatModel
        from openjudge.providers.vllm_reward import RewardModelClient

        if isinstance(provider, VLLMChatModel):
            return RewardModelClient(
                provider.base_url, spec.model, api_key=spec.api_key, policy=provider.policy, limits=limits
            )
    raise ValueError(
        f"reward_model graders need a provider of kind 'transformers' (in process) or 'vllm' "
        f"(its /classify endpoint), not {spec.kind!r}"
    )


def _openai_grader_params(
    params: dict[str, Any],
    provider: str | None,
    providers: Mapping[str, ChatClient],
    grader_providers: dict[str, str],
    name: str,
    base_dir: Path | None,
) -> None:
    """An ``openai_grader``: its judge (if a provider is named) and its JSON file relative to the config."""
    if provider is not None and provider in providers:
        params["model"] = providers[provider]
        grader_providers[name] = provider
    grader = params.get("grader")
    if isinstance(grader, str) and not grader.lstrip().startswith("{") and base_dir is not None:
        params["grader"] = str(base_dir / grader)  # an absolute path stays as it is
    params.setdefault("name", name)


class _NamedAggregator:
    """A user's aggregator under the config's name for it (whatever ``name`` it sets itself)."""

    def __init__(self, name: str, inner: Callable[[Mapping[str, GraderResult]], GraderResult]) -> None:
        self.name = name
        self.inner = inner

    def __call__(self, results: Mapping[str, GraderResult]) -> GraderResult:
        return self.inner(results)


def _custom_aggregator(spec: AggregatorSpec, i: int, where: Located, base_dir: Path | None) -> Aggregator:
    cls = load_class(spec.type, base_dir, what="aggregator")
    params, found = grader_arguments(
        cls, spec.params, where, ("aggregators", i, "params"), injected=frozenset({"name"})
    )
    if found:
        raise ConfigError(found)
    name = spec.result_name
    if "name" in inspect.signature(cls).parameters:
        params["name"] = name
    return _NamedAggregator(name, cls(**params))


def _aggregator(spec: AggregatorSpec) -> Aggregator:
    if spec.type == "weighted_mean":
        return WeightedMeanAggregator(spec.name or "weighted_mean", spec.weights, on_error=spec.on_error)
    if spec.type == "min":
        return MinAggregator(spec.name or "min")
    inner = WeightedMeanAggregator(weights=spec.weights, on_error=spec.on_error)
    return GateAggregator(spec.gates or {}, inner, name=spec.name or "gate", fail_score=spec.fail_score)


def _scale_problems(
    config: JobConfig,
    aggregators: Sequence[Aggregator],
    graders: Mapping[str, BaseGrader],
    where: Located,
    *,
    members_scored: bool,
    unbuilt: Mapping[str, tuple[GraderMode, ScoreRange | None]] | None = None,
) -> list[str]:
    """Aggregators may only mix graders whose scores can be put on one 0-1 scale.

    ``aggregators`` are built from ``config.aggregators``, in order. With
    ``members_scored`` (group judging), a listwise grader's group result is split into
    one 0-1 score per member before aggregation, so it mixes like any scored grader.
    """
    problems: list[str] = []
    for i, (agg, built) in enumerate(zip(config.aggregators, aggregators, strict=True)):
        label = f"{agg.type} aggregator {agg.name or agg.type!r}"
        instead = "" if agg.type == "min" else ", or list the graders to mix in 'weights'"
        mixed = mixed_graders(built, list(config.graders))
        if agg.type != "gate" and len(mixed) < 2:
            continue  # one grader: nothing to put on a common scale (a gate still reads its gates' scale)
        for name in mixed:
            grader = graders.get(name)
            if grader is not None:
                mode, score_range = grader.mode, grader.score_range
            elif unbuilt is not None and name in unbuilt:  # failed to build: judge by what it declares
                mode, score_range = unbuilt[name]
            else:
                continue  # its type is unknown; already reported
            at = (
                ("aggregators", i, "weights", name)
                if agg.weights and name in agg.weights
                else ("aggregators", i)
            )
            if mode is GraderMode.LISTWISE:
                if members_scored:
                    continue
                problems.append(
                    where.at(
                        at,
                        f"{label} cannot use grader {name!r}: it returns ranks, not scores{instead}",
                    )
                )
            elif score_range is None:
                problems.append(
                    where.at(
                        at,
                        f"{label} mixes grader {name!r}, which declares no score range, so its raw scores "
                        f"cannot be put on the 0-1 scale of the others: set graders.{name}.params.score_range "
                        f"(e.g. [1, 5]){instead}",
                    )
                )
    return problems


def _declared_range(
    params: Mapping[str, object], cls: type[BaseGrader]
) -> tuple[GraderMode, ScoreRange | None]:
    """An ``llm`` grader's mode and score range as its config declares them, without building it."""
    try:
        declared = ScoreRange.coerce(params.get("score_range"))  # ValueError if malformed
    except ValueError:
        declared = None  # malformed: reported by the parameter check
    return GraderMode.POINTWISE, declared if declared is not None else cls.default_score_range


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
    members_scored: bool = False,
    own_process: bool = False,
) -> BuiltJob:
    """Build providers (one object per named provider, shared by its graders) and the runner.

    ``members_scored`` is for group judging (``openjudge.integrations.verl.group``): each listwise
    grader's result is split into a 0-1 score per member, which aggregators may then mix.
    ``own_process`` says the process is openjudge's own (``openjudge run``, its Ray workers):
    the runner then tunes the garbage collector unless ``runner.tune_collector`` is false.
    Elsewhere (a trainer's worker, your program) it does only if that is true.

    Raises:
        ConfigError: A grader's parameters do not fit its constructor, an aggregator mixes
            a grader without a score range, or a provider cannot be built (every message
            says which field, on which line).
    """
    where = config.located(source)
    providers: dict[str, ChatClient] = {}
    problems: list[str] = []
    cache = _cache(config, base_dir) if use_cache else None
    limits = ConnectionLimits()
    for name, spec in config.providers.items():
        try:
            providers[name] = build_provider(
                name, spec, limits=limits, cache=cache, runner_concurrency=config.runner.max_concurrency
            )
        except Exception as exc:  # bad settings, or an ImportError naming the extra to install
            problems.append(where.at(("providers", name), _provider_problem(name, exc)))
    configs: dict[str, GraderConfig] = {}
    grader_providers: dict[str, str] = {}
    reward_models: dict[str, RewardModel] = {}  # one per provider, shared by its graders
    imports_from = base_dir if base_dir is not None else config.base_dir
    classes: dict[str, type[BaseGrader]] = {}
    for name, gspec in config.graders.items():
        try:
            cls, kind = grader_class(gspec.type, imports_from)
        except ValueError as exc:  # checked at load; a module changed since, or another base_dir
            problems.append(where.at(("graders", name, "type"), str(exc)))
            continue
        classes[name] = cls
        if kind == "llm" and (gspec.provider is None or gspec.provider not in providers):
            continue  # its provider failed to build; already reported
        base = ("graders", name, "params")
        params, found = grader_arguments(cls, gspec.params, where, base)
        if found:
            problems += found
            continue
        if is_import_path(gspec.type) and "name" in inspect.signature(cls).parameters:
            params.setdefault("name", name)  # results are named after the config's key
        if gspec.type == "reward_model" and gspec.provider is not None:
            if gspec.provider not in reward_models:
                try:
                    reward_models[gspec.provider] = _reward_model(
                        providers[gspec.provider], config.providers[gspec.provider], limits=limits
                    )
                except Exception as exc:  # e.g. a provider kind that serves no reward model
                    problems.append(where.at(("graders", name, "provider"), str(exc)))
                    continue
            params["client"] = reward_models[gspec.provider]
            grader_providers[name] = gspec.provider
        elif gspec.type == "openai_grader":
            _openai_grader_params(params, gspec.provider, providers, grader_providers, name, base_dir)
        elif kind == "llm" and gspec.provider is not None:
            params["model"] = providers[gspec.provider]
            grader_providers[name] = gspec.provider
            if gspec.type == "llm":
                params.setdefault("name", name)
        try:
            grader: BaseGrader = cls(**params)
        except Exception as exc:  # whatever a constructor raises on bad params is a config problem
            problems.append(where.at(base, f"cannot build {gspec.type!r}: {exc}"))
            continue
        if gspec.response_failure_score is not None:
            try:
                set_response_failure_score(grader, gspec.response_failure_score)
            except ValueError as exc:
                problems.append(where.at(("graders", name, "response_failure_score"), str(exc)))
                continue
        mapper = gspec.mapper if gspec.mapper is not None else _same_named(grader, name)
        try:
            BoundGrader(name, GraderConfig(grader, mapper))  # checks the mapper's input names now
            configs[name] = GraderConfig(grader, mapper)
        except (TypeError, ValueError) as exc:
            problems.append(where.at(("graders", name, "mapper"), str(exc)))
    aggregators: list[Aggregator] = []
    for i, aspec in enumerate(config.aggregators):
        if not is_import_path(aspec.type):
            aggregators.append(_aggregator(aspec))
            continue
        try:
            aggregators.append(_custom_aggregator(aspec, i, where, imports_from))
        except ConfigError as exc:
            problems += exc.problems
        except Exception as exc:  # whatever its constructor raises on bad params
            problems.append(where.at(("aggregators", i), f"cannot build {aspec.type!r}: {exc}"))
    if len(aggregators) == len(config.aggregators):
        problems += _scale_problems(
            config,
            aggregators,
            {k: c.grader for k, c in configs.items()},
            where,
            members_scored=members_scored,
            unbuilt={  # an 'llm' grader whose template failed still declares its range, or not
                k: _declared_range(config.graders[k].params, cls)
                for k, cls in classes.items()
                if config.graders[k].type == "llm"
            },
        )
    if problems:
        raise ConfigError(problems)
    runner = GradingRunner(
        configs,
        max_concurrency=config.runner.max_concurrency,
        aggregators=aggregators,
        show_progress=show_progress,
        timeout=config.runner.timeout_s,
        deadline=config.runner.deadline_s,
        tune_collector=own_process if config.runner.tune_collector is None else config.runner.tune_collector,
    )
    return BuiltJob(runner=runner, providers=providers, grader_providers=grader_providers, cache=cache)
