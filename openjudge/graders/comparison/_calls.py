"""Running ordered comparisons in a task group, and summing up their outcome."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import anyio

from openjudge.graders.comparison._pairwise_judge import OrderVerdict, PairwiseJudge
from openjudge.results import GraderError, TokenUsage

__all__ = ["compare_into", "failure_of", "first_failure", "total_usage"]


async def compare_into(
    judge: PairwiseJudge,
    values: Mapping[str, object],
    out: list[OrderVerdict | GraderError | None],
    index: int,
    limiter: anyio.CapacityLimiter | None = None,
    responses: Sequence[str] = ("response_a", "response_b"),
) -> None:
    """Run one comparison and store its verdict at ``out[index]`` (a task-group worker).

    ``responses``: the placeholders holding graded responses (see :meth:`PairwiseJudge.compare`).
    """
    if limiter is None:
        out[index] = await judge.compare(values, responses)
        return
    async with limiter:
        out[index] = await judge.compare(values, responses)


def failure_of(verdict: OrderVerdict | GraderError | None) -> GraderError | None:
    """``None`` for a verdict, else why there is none (a call that never stored one is ``internal``)."""
    if isinstance(verdict, OrderVerdict):
        return None
    if isinstance(verdict, GraderError):
        return verdict
    return GraderError(name="", kind="internal", message="no verdict")


def total_usage(verdicts: Sequence[OrderVerdict | GraderError | None]) -> TokenUsage:
    """Tokens and requests of every call, failed ones included."""
    usage = TokenUsage()
    for v in verdicts:
        if v is not None and v.usage is not None:
            usage = usage + v.usage
    return usage


def first_failure(
    name: str,
    labels: Sequence[str],
    verdicts: Sequence[OrderVerdict | GraderError | None],
    *,
    latency_s: float,
) -> GraderError | None:
    """``None`` if every call succeeded, else one error naming the failed calls.

    The error takes the kind of the first failure and the usage of every call.
    """
    failed = [
        (label, failure)
        for label, v in zip(labels, verdicts, strict=True)
        if (failure := failure_of(v)) is not None
    ]
    if not failed:
        return None
    first = failed[0][1]
    detail = "; ".join(f"{label}: {failure.message}" for label, failure in failed[:3])
    count = f"{len(failed)} of {len(verdicts)} judge calls failed"
    return GraderError(
        name=name,
        kind=first.kind,
        message=f"{count} ({detail}{'; ...' if len(failed) > 3 else ''})",
        error_type=first.error_type,
        usage=total_usage(verdicts),
        latency_s=latency_s,
    )
