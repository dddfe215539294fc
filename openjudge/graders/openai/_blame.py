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
``python_grader_runtime_error``  ``grade()`` raised, returned a non-number, NaN/inf or a value outside
                                 the range, ran out of time or memory: response, bottom score (the
                                 sample is the only thing that differs between calls; details kept)
``python_grader_server_error``   ``GraderError`` (the sandbox could not run); the grader source
                                 failing before ``grade()`` is called: ``GraderError(internal)``
``model_grader_parse_error``     ``GraderError(parse_error)`` after one re-ask, as every LLM judge here
``model_grader_refusal_error``   the judge refused the response (a content filter, a refusal): response,
                                 bottom score, cause ``judge_refused``, as ``LLMGrader`` scores it; a
                                 lone surrogate in the sample (no judge can be sent it): response,
                                 cause ``lone_surrogate``; in the item: ``GraderError(invalid_input)``
``model_grader_server_error``    ``GraderError(provider_error | timeout)`` from the provider
``truncated_observation_error``, not produced: they concern OpenAI's hosted agent rollouts
``unresponsive_reward_error``
``other_error``                  ``GraderError(internal)``
===============================  =====================================================================

A ``multi`` grader whose sub-grader failed because of the response is itself a
response failure at its own bottom (never the formula applied to a bottom sub-score:
with ``1 - toxicity`` that would turn a crash into a reward).
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import JsonValue

from openjudge.results import RESPONSE_BLAME, GraderScore, ScoreRange, is_response_failure

__all__ = ["is_response_failure", "response_failure"]

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
