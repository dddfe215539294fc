"""The request and response shapes the server speaks: OpenRLHF's and a generic one.

OpenRLHF (``--reward.remote_url``, 0.11: ``SingleTurnAgentExecutor._fetch_rewards_via_http``)
posts ``{"query": [...], "prompts": [...], "labels": [...]}``, one entry per sample (a
query is the prompt and the response decoded together), and reads ``rewards``, ``scores``
and ``extra_logs`` from the answer, one value per sample, as its own ``serve_rm`` answers.
OpenRLHF turns each value into a tensor: every value here is a number, never ``null`` or
text (a ``null`` reward would make it look for a reward model it does not have).

The generic shape is ``{"samples": [{field: value, ...}, ...], "groups": [...]}`` (groups
optional) answered by ``{"results": [...]}``: one object per sample with its reward (``null``
when the sample is dropped), whether it failed, each grader's score and each failure.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from openjudge.integrations.scoring._scorer import RewardScorer, ScoredSample
from openjudge.results import GraderScore, NotApplicable

__all__ = [
    "BadRequest",
    "Batch",
    "generic_batch",
    "generic_response",
    "numeric_keys",
    "openrlhf_batch",
    "openrlhf_response",
]


class BadRequest(Exception):
    """The request is not in the route's shape (answered 400 with this message)."""


@dataclass(frozen=True, slots=True)
class Batch:
    """The samples of one request (grader fields) and the group of each."""

    samples: list[dict[str, Any]]
    groups: list[str] | None


def _list_field(body: Mapping[str, object], key: str, shape: str) -> list[object]:
    value = body.get(key)
    if not isinstance(value, list):
        raise BadRequest(
            f"{shape}: {key!r} must be a list (one entry per sample), got {type(value).__name__}"
        )
    return value


def openrlhf_batch(body: object) -> Batch:
    """OpenRLHF's request as samples: ``query``, ``prompt``, ``label`` and ``response``.

    ``response`` is the query without its prompt, when the query starts with it (OpenRLHF
    decodes prompt and response together, special tokens kept); otherwise the sample has
    no ``response`` and graders that read it fail on it (``invalid_input``). Samples with
    the same prompt form a group (for ``on_failure: neutral``).

    Raises:
        BadRequest: Not an object, ``query`` missing, or lists of different lengths.
    """
    shape = "OpenRLHF request"
    if not isinstance(body, dict):
        raise BadRequest(f"{shape}: expected a JSON object with 'query', 'prompts' and 'labels'")
    queries = _list_field(body, "query", shape)
    prompts = (
        _list_field(body, "prompts", shape) if body.get("prompts") is not None else [None] * len(queries)
    )
    labels = _list_field(body, "labels", shape) if body.get("labels") is not None else [None] * len(queries)
    if not len(queries) == len(prompts) == len(labels):
        raise BadRequest(
            f"{shape}: 'query' ({len(queries)}), 'prompts' ({len(prompts)}) and 'labels' ({len(labels)}) "
            "must have one entry per sample"
        )
    samples: list[dict[str, Any]] = []
    for i, (query, prompt) in enumerate(zip(queries, prompts, strict=True)):
        if not isinstance(query, str):
            raise BadRequest(f"{shape}: query[{i}] must be a string, got {type(query).__name__}")
        if prompt is not None and not isinstance(prompt, str):
            raise BadRequest(f"{shape}: prompts[{i}] must be a string, got {type(prompt).__name__}")
        sample: dict[str, Any] = {"query": query, "prompt": prompt, "label": labels[i]}
        if prompt is not None and query.startswith(prompt):
            sample["response"] = query[len(prompt) :]
        samples.append(sample)
    groups = [p if isinstance(p, str) else f"#{i}" for i, p in enumerate(prompts)]
    return Batch(samples, groups)


def openrlhf_response(scorer: RewardScorer, scored: Sequence[ScoredSample]) -> dict[str, JsonValue]:
    """OpenRLHF's answer: ``rewards`` and ``scores`` (the same list) and the numeric extra keys
    as ``extra_logs`` (OpenRLHF logs each as a metric), one value per sample."""
    rewards: list[JsonValue] = []
    for s in scored:
        if math.isnan(s.reward):  # the route's placement cannot drop: never reached
            raise AssertionError("a NaN reward on the OpenRLHF route")
        rewards.append(s.reward)
    logs: dict[str, JsonValue] = {key: [s.extra[key] for s in scored] for key in numeric_keys(scorer)}
    return {"rewards": rewards, "scores": list(rewards), "extra_logs": logs}


def numeric_keys(scorer: RewardScorer) -> tuple[str, ...]:
    """The extra keys whose values are numbers for every sample (not error kinds or reasons)."""
    return _numeric(scorer.keys)


@functools.lru_cache(maxsize=16)
def _numeric(keys: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(k for k in keys if not k.endswith(("/error_kind", "/reason")))


def generic_batch(body: object) -> Batch:
    """The generic request: ``samples`` (objects of grader fields), optional ``groups``.

    Raises:
        BadRequest: Not an object, a sample that is not an object, or ``groups`` of another length.
    """
    shape = "request"
    if not isinstance(body, dict):
        raise BadRequest(f"{shape}: expected a JSON object with 'samples' (and optionally 'groups')")
    samples = _list_field(body, "samples", shape)
    for i, sample in enumerate(samples):
        if not isinstance(sample, dict):
            raise BadRequest(
                f"{shape}: samples[{i}] must be an object of the graders' fields, got {type(sample).__name__}"
            )
    groups: list[str] | None = None
    if body.get("groups") is not None:
        raw = _list_field(body, "groups", shape)
        if len(raw) != len(samples):
            raise BadRequest(
                f"{shape}: 'groups' ({len(raw)}) must have one entry per sample ({len(samples)})"
            )
        groups = [str(g) for g in raw]
    return Batch([dict(s) for s in samples if isinstance(s, dict)], groups)


def generic_response(scorer: RewardScorer, scored: Sequence[ScoredSample]) -> dict[str, JsonValue]:
    """One result per sample: ``reward`` (``null``: dropped), ``failed``, ``scores``, ``errors``."""
    include_reasons = scorer.settings.include_reasons
    results: list[JsonValue] = []
    for s in scored:
        scores: dict[str, JsonValue] = {}
        errors: dict[str, JsonValue] = {}
        reasons: dict[str, JsonValue] = {}
        skipped: list[JsonValue] = []
        for name, result in s.results.items():
            scores[name] = result.score if isinstance(result, GraderScore) else None
            kind = scorer.error_kind(s, name)
            if kind and not isinstance(result, GraderScore | NotApplicable):
                errors[name] = {"kind": kind, "message": result.message}
            if isinstance(result, NotApplicable):
                skipped.append(name)
            if include_reasons and name in scorer.grader_names:
                reasons[name] = result.reason
        entry: dict[str, JsonValue] = {
            "reward": None if math.isnan(s.reward) else s.reward,
            "failed": s.failed,
            "scores": scores,
            "errors": errors,
        }
        if skipped:
            entry["not_applicable"] = skipped
        if include_reasons:
            entry["reasons"] = reasons
        results.append(entry)
    return {"results": results}
