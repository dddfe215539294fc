"""Turn a validated :class:`JobConfig` into providers, graders and a runner.

Problems found while building (a parameter a grader does not take, a score range an
aggregator needs, a provider that cannot be constructed) are reported all at once, as
``file:line: field: message`` lines of one :class:`~openjudge.config._loader.ConfigError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openjudge.config._aggregators import build_aggregators, declared_range, scale_problems
from openjudge.config._binding import ProviderObjects
from openjudge.config._graders import BuiltGraders
from openjudge.config._loader import ConfigError
from openjudge.config._locations import Located
from openjudge.config._spec import PROVIDER_KINDS, JobConfig, ProviderSpec
from openjudge.models._limits import ConnectionLimits
from openjudge.models.cache import JudgeCache
from openjudge.models.chat_client import ChatClient
from openjudge.models.chat_model import Sampling
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.providers._registry import load_factory
from openjudge.runner.aggregators import Aggregator
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


def _provider_problem(name: str, exc: Exception) -> str:
    """Why a provider could not be built, worded for a config (not for Python callers)."""
    text = str(exc)
    if "api_key=" in text:  # the Python API's "pass api_key=..." advice
        return (
            f"no API key: set providers.{name}.api_key (e.g. api_key: ${{OPENAI_API_KEY}}); "
            "for a local server also set base_url"
        )
    return text


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
    imports_from = base_dir if base_dir is not None else config.base_dir
    cache = _cache(config, base_dir) if use_cache else None
    limits = ConnectionLimits()
    providers, problems = _providers(config, where, cache, limits)
    graders = BuiltGraders(
        where, providers, ProviderObjects(providers, config.providers, limits), imports_from, base_dir
    )
    for name, spec in config.graders.items():
        graders.add(name, spec)
    problems += graders.problems
    aggregators, found = build_aggregators(config, where, imports_from)
    problems += found
    if len(aggregators) == len(config.aggregators):
        problems += _scale_problems(config, aggregators, graders, where, members_scored=members_scored)
    if problems:
        raise ConfigError(problems)
    return BuiltJob(
        runner=_runner(
            config, graders.configs, aggregators, show_progress=show_progress, own_process=own_process
        ),
        providers=providers,
        grader_providers=graders.grader_providers,
        cache=cache,
    )


def _providers(
    config: JobConfig, where: Located, cache: JudgeCache | None, limits: ConnectionLimits
) -> tuple[dict[str, ChatClient], list[str]]:
    """One client per named provider, and the problems of those that could not be built."""
    providers: dict[str, ChatClient] = {}
    problems: list[str] = []
    for name, spec in config.providers.items():
        try:
            providers[name] = build_provider(
                name, spec, limits=limits, cache=cache, runner_concurrency=config.runner.max_concurrency
            )
        except Exception as exc:  # bad settings, or an ImportError naming the extra to install
            problems.append(where.at(("providers", name), _provider_problem(name, exc)))
    return providers, problems


def _scale_problems(
    config: JobConfig,
    aggregators: list[Aggregator],
    graders: BuiltGraders,
    where: Located,
    *,
    members_scored: bool,
) -> list[str]:
    """Aggregators mixing graders with no common scale; a grader whose type's range is its params
    is judged by what it declares even if it failed to build."""
    unbuilt = {
        name: declared_range(config.graders[name].params, cls)
        for name, (cls, entry) in graders.types.items()
        if entry.range_from_params
    }
    built = {name: cfg.grader for name, cfg in graders.configs.items()}
    return scale_problems(config, aggregators, built, where, members_scored=members_scored, unbuilt=unbuilt)


def _runner(
    config: JobConfig,
    configs: dict[str, GraderConfig],
    aggregators: list[Aggregator],
    *,
    show_progress: bool,
    own_process: bool,
) -> GradingRunner:
    tune = config.runner.tune_collector
    return GradingRunner(
        configs,
        max_concurrency=config.runner.max_concurrency,
        aggregators=aggregators,
        show_progress=show_progress,
        timeout_s=config.runner.timeout_s,
        deadline_s=config.runner.deadline_s,
        tune_collector=own_process if tune is None else tune,  # the host's collector is the host's
        graders_field=config.data.graders_field,
    )
