"""Meta-evaluate the graders of a job config file: build them as ``openjudge run`` does, then collect."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from openjudge.config._build import build_job
from openjudge.config._loader import ConfigError, load_config
from openjudge.config._spec import JobConfig
from openjudge.jobs._summary import Price
from openjudge.metaeval._items import LabelledSet
from openjudge.metaeval._runs import MetaEvalRun, collect
from openjudge.metaeval._verdicts import GraderKind, kind_of_fields

__all__ = ["collect_config"]


def _prices(config: JobConfig, grader_providers: dict[str, str]) -> dict[str, Price]:
    prices: dict[str, Price] = {}
    for grader, provider in grader_providers.items():
        price = config.providers[provider].price
        if price:
            prices[grader] = Price(
                prompt_per_1k=price.get("prompt_per_1k", 0.0),
                completion_per_1k=price.get("completion_per_1k", 0.0),
            )
    return prices


async def collect_config(
    config: str | Path | JobConfig,
    data: LabelledSet,
    *,
    graders: Sequence[str] | None = None,
    repeats: int = 1,
    swap: bool = True,
    use_cache: bool = False,
    show_progress: bool = False,
    base_dir: Path | None = None,
    label: str = "",
) -> MetaEvalRun:
    """Build a config's graders and providers, and judge the labelled items with them.

    Args:
        config: A config file, or a loaded :class:`~openjudge.config.JobConfig`.
        data: The labelled items.
        graders: Evaluate only these graders (default: all).
        repeats: Judgements per item and view, for self-consistency.
        swap: Also judge each pair in the swapped order.
        use_cache: Let temperature-0 providers use the judge cache (off by default: cached
            replies cost no time or money, which would make those figures wrong). Never
            used when ``repeats > 1``.
        show_progress: Draw a progress line per grader.
        base_dir: Where relative paths in the config resolve (default: the file's folder).
        label: The run's name (default: the config file's name).

    Raises:
        ConfigError: The config is invalid, or names a grader it does not have.
    """
    if isinstance(config, JobConfig):
        job_config, source = config, label or "<config>"
    else:
        path = Path(config)
        job_config, source = load_config(path), str(path)
        base_dir = base_dir or path.parent
        label = label or path.name
    job = build_job(job_config, source=source, base_dir=base_dir, use_cache=use_cache and repeats == 1)
    try:
        configs = job.runner.grader_configs
        if graders is not None:
            unknown = [g for g in graders if g not in configs]
            if unknown:
                raise ConfigError(
                    [f"{source}: graders: no grader named {unknown[0]!r} (graders: {', '.join(configs)})"]
                )
            configs = {name: configs[name] for name in graders}
        # The job gives mapper-less graders a function mapper (for YAML-worded errors), so
        # which fields each grader reads comes from the config itself.
        kinds: dict[str, GraderKind] = {}
        for name, cfg in configs.items():
            spec = job_config.graders[name]
            if spec.mapper is not None:
                kinds[name] = kind_of_fields(path.split(".", 1)[0] for path in spec.mapper.values())
            else:
                kinds[name] = kind_of_fields(cfg.grader.input_spec().names)
        runner = job.runner.replace(grader_configs=configs, aggregators=None, show_progress=False)
        return await collect(
            runner,
            data,
            repeats=repeats,
            swap=swap,
            kinds=kinds,
            providers=dict(job.grader_providers),
            prices=_prices(job_config, dict(job.grader_providers)),
            show_progress=show_progress,
            label=label,
        )
    finally:
        if job.cache is not None:
            job.cache.close()
