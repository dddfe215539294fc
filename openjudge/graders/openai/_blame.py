"""Whose failure it is: OpenAI's error kinds mapped onto openjudge's results.

OpenAI's graders run reports ``reward`` with typed ``errors``; in RL an error is not a
penalty, so a failure the *response* caused must be a score at the bottom of the range
(a policy never gains by breaking a grader), and only a *system* failure is a
:class:`~openjudge.results.GraderError`:

===============================  =====================================================================
OpenAI error                     here
===============================  =====================================================================
``sample_parse_error``           response: bottom score, cause ``sample_parse_error`` (a template needs
                                 ``sample.output_json`` and the response is not JSON)
``invalid_variable_error``       ``sample.*`` missing: response, bottom score; ``item.*`` missing:
                                 ``GraderError(invalid_input)`` (the dataset's); unknown namespace:
                                 refused when the grader is built
``formula_parse_error``          refused when the grader is built (``calculate_output`` is config);
                                 a formula that cannot be computed for these sub-scores (``x / 0``):
                                 response, bottom score, cause ``formula_error``
``python_grader_runtime_error``  ``grade()`` raised, returned a non-number or NaN/inf, ran out of
                                 time or memory: response, bottom score (the sample is the only thing
                                 that differs between calls; details kept); returned a value outside
                                 ``python_score_range``: ``GraderError(internal)`` (the config's range
                                 is wrong: OpenAI's python graders declare none)
``python_grader_server_error``   ``GraderError`` (the sandbox could not run); the grader source
                                 failing before ``grade()`` is called: ``GraderError(internal)``
``model_grader_parse_error``     score_model: not produced; OpenAI's rule scores a non-numeric output
                                 0, flagged ``non_numeric_output`` (see :mod:`._score_reading`), or
                                 with ``score_model_non_numeric="error"`` as label_model;
                                 label_model: ``GraderError(parse_error)`` after one re-ask
``model_grader_refusal_error``   the judge refused the response (a content filter, the provider's
                                 ``refusal`` field): response, bottom score, cause ``judge_refused``,
                                 as ``LLMGrader`` scores it; decided before the reply is read, so a
                                 refusal is never a non-numeric 0 (a refusal written as plain text,
                                 with neither signal, is a non-numeric output: 0, flagged); a lone
                                 surrogate in the sample (no judge can be sent it): response, cause
                                 ``lone_surrogate``; in the item: ``GraderError(invalid_input)``
``model_grader_server_error``    ``GraderError(provider_error | timeout)`` from the provider
``truncated_observation_error``, not produced: they concern OpenAI's hosted agent rollouts
``unresponsive_reward_error``
``other_error``                  ``GraderError(internal)``
(none: openjudge's own)          score_model/label_model: a degenerate response (empty, punctuation
                                 only, a reasoning opener alone: a "master key") scores the bottom
                                 before any judge call, cause ``degenerate_response``
                                 (``reject_degenerate=False`` turns it off); a judge prompt past the
                                 judge's context window that would fit without the response:
                                 response, cause ``response_too_long``, else
                                 ``GraderError(invalid_input)``
===============================  =====================================================================

A ``multi`` grader whose sub-grader failed because of the response is itself a
response failure at its own bottom (never the formula applied to a bottom sub-score:
with ``1 - toxicity`` that would turn a crash into a reward).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pydantic import JsonValue

from openjudge.graders.blame import check_response_text
from openjudge.results import RESPONSE_BLAME, GraderScore, ResponseFailure, ScoreRange, is_response_failure

__all__ = ["is_response_failure", "lone_surrogate", "response_failure", "unsendable"]

_REASON_LIMIT = 500


def response_failure(
    name: str,
    score_range: ScoreRange | None,
    cause: str,
    message: str,
    *,
    score: float | None = None,
    metadata: Mapping[str, JsonValue] | None = None,
) -> GraderScore:
    """The score of a failure the response caused: ``score`` if set, else the bottom of the range (0 without one).

    ``metadata`` gets ``blame: "response"`` and ``cause`` (an OpenAI error kind or a
    more precise cause), as :class:`openjudge.results.ResponseFailure` gives every
    openjudge grader (built here rather than raised: a ``multi`` grader keeps the
    sub-grader's own result and range, then puts the whole at its own bottom).
    """
    if score is None:
        if score_range is None:
            score = 0.0
        else:
            score = score_range.low if score_range.higher_is_better else score_range.high
    return GraderScore(
        name=name,
        score=score,
        reason=message[:_REASON_LIMIT],
        metadata={**(metadata or {}), "blame": RESPONSE_BLAME, "cause": cause},
        score_range=score_range,
    )


def lone_surrogate(sample: Mapping[str, JsonValue]) -> str | None:
    """Why the sample's text cannot be sent to a judge (a lone surrogate), or ``None``."""
    try:
        check_response_text("the response", str(sample.get("output_text") or ""))
        tools = sample.get("output_tools")
        if tools:
            check_response_text("the response's tool calls", json.dumps(tools, ensure_ascii=False))
    except ResponseFailure as failure:
        return failure.message
    except (ValueError, RecursionError):
        return None  # JSON cannot write the calls: the judge is not sent them as JSON either
    return None


def unsendable(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the rendered messages cannot be sent (text with no UTF-8 form), or ``None``.

    A message's content is a string, or a list of parts (text, image URL, audio data)
    whose strings are checked alike.
    """
    for message in messages:
        for text in _strings(message["content"]):
            if text.isascii():
                continue
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                return f"has text with no UTF-8 form (a lone surrogate U+{ord(text[exc.start]):04X})"
    return None


def _strings(content: object) -> Iterator[str]:
    """Every string in a rendered message's content (parts are dicts of strings, two deep)."""
    if isinstance(content, str):
        yield content
    elif isinstance(content, list | dict):
        for value in content if isinstance(content, list) else content.values():
            yield from _strings(value)
