"""Estimate judge tokens and cost for a config and dataset, without calling anything."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from openjudge.config._build import BuiltJob
from openjudge.config._spec import JobConfig
from openjudge.graders.judge_grader import JudgeGrader
from openjudge.jobs._datasets import SampleRecord, iter_samples
from openjudge.jobs._summary import format_cost
from openjudge.models.chat_client import ChatClient
from openjudge.results import GraderError
from openjudge.runner._mapper import compile_mapper

__all__ = ["GraderEstimate", "estimate_job", "render_estimate"]

DEFAULT_COMPLETION_TOKENS = 200
"""Assumed reply length when a provider sets no ``max_tokens`` (a short JSON verdict)."""


@dataclass(slots=True)
class GraderEstimate:
    """One LLM grader's estimate.

    Attributes:
        assumed_reply: Completion tokens assumed per call when the provider sets no
            ``max_tokens`` (:data:`DEFAULT_COMPLETION_TOKENS`), else ``None``.
    """

    name: str
    calls: int = 0
    skipped: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    assumed_reply: int | None = None


def _tokens(messages: list[dict[str, object]]) -> int:
    return max(1, sum(len(str(m.get("content") or "")) for m in messages) // 4)


def _max_tokens(grader: JudgeGrader) -> int | None:
    sampling = grader.sampling.max_tokens if grader.sampling is not None else None
    model = grader.model
    return sampling or (model.sampling.max_tokens if isinstance(model, ChatClient) else None)


def estimate_job(config: JobConfig, job: BuiltJob, data_path: Path) -> list[GraderEstimate]:
    """Tokens per LLM grader: rendered prompt length / 4, plus the reply allowance, per sample it
    applies to (routing)."""
    graders = {
        name: cfg for name, cfg in job.runner.grader_configs.items() if isinstance(cfg.grader, JudgeGrader)
    }
    estimates = {name: GraderEstimate(name) for name in graders}
    allowance: dict[str, int] = {}
    for name, cfg in graders.items():
        assert isinstance(cfg.grader, JudgeGrader)
        limit = _max_tokens(cfg.grader)
        allowance[name] = limit or DEFAULT_COMPLETION_TOKENS
        estimates[name].assumed_reply = None if limit else DEFAULT_COMPLETION_TOKENS
    mappers = {name: compile_mapper(cfg.mapper) for name, cfg in graders.items()}
    for record in iter_samples(
        data_path, format=config.data.format, on_error="skip", id_key=config.data.id_field
    ):
        if not isinstance(record, SampleRecord):
            continue
        routed = job.runner.route(record.data)  # graders that do not apply make no call there
        for name, cfg in graders.items():
            if name in routed:
                continue
            grader = cfg.grader
            assert isinstance(grader, JudgeGrader)
            mapper = mappers[name]
            try:
                inputs: Mapping[str, object] = mapper(record.data) if mapper is not None else record.data
            except (KeyError, TypeError, ValueError):
                estimates[name].skipped += 1
                continue
            prepared = grader.prepare(inputs)
            if isinstance(prepared, GraderError):
                estimates[name].skipped += 1
                continue
            est = estimates[name]
            est.calls += 1
            est.prompt_tokens += _tokens(prepared)
            est.completion_tokens += allowance[name]
    for name, est in estimates.items():
        provider = config.providers.get(job.grader_providers.get(name, ""))
        price = provider.price if provider is not None else None
        if price:
            est.cost = est.prompt_tokens / 1000 * price.get(
                "prompt_per_1k", 0.0
            ) + est.completion_tokens / 1000 * price.get("completion_per_1k", 0.0)
    return list(estimates.values())


def render_estimate(estimates: list[GraderEstimate]) -> str:
    """A table per grader; a note for each assumption it makes."""
    if not estimates:
        return "no LLM graders in this config: grading makes no judge calls"
    header = ("grader", "calls", "skipped", "prompt tokens", "completion tokens", "cost")
    rows = [
        (
            e.name,
            str(e.calls),
            str(e.skipped),
            f"{e.prompt_tokens:,}",
            f"{e.completion_tokens:,}",
            format_cost(e.cost),
        )
        for e in estimates
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in [header, *rows]
    ]
    assumed = [e.name for e in estimates if e.assumed_reply is not None]
    if assumed:
        lines.append(
            f"\ncompletion tokens assume {DEFAULT_COMPLETION_TOKENS} per call for {', '.join(assumed)} "
            "(their provider sets no sampling.max_tokens; a short JSON verdict); prompt tokens are "
            "characters / 4"
        )
    else:
        lines.append(
            "\ncompletion tokens are each provider's sampling.max_tokens (an upper bound); "
            "prompt tokens are characters / 4"
        )
    return "\n".join(lines)
