"""LLM-as-a-judge from a prompt template: the template's placeholders are the grader's inputs.

:class:`LLMGrader` is the :class:`~openjudge.graders.judge_grader.JudgeGrader` a user builds
from a template (``LLMGrader(model, name=..., template=..., score_range=...)``): its inputs are
the template's ``{placeholders}``, its verdict model is :class:`JudgeVerdict` unless
``structured_model`` says otherwise, and the verdict's ``score`` and ``reason`` become the
result (other verdict fields go to metadata). See :mod:`openjudge.graders.judge_grader` for
the path of one call, re-asks and typed errors.

To read a custom verdict differently, subclass ``LLMGrader[YourVerdict]`` and override
:meth:`LLMGrader.to_result`; the verdict arrives typed as ``YourVerdict``::

    class Pass(BaseModel):
        reason: str
        passed: bool

    class PassFail(LLMGrader[Pass]):
        def to_result(self, verdict: Pass, call: PreparedCall[None]) -> GraderScore:
            return GraderScore(name=self.name, score=float(verdict.passed), reason=verdict.reason)

An LLM grader is pointwise: ``aevaluate`` returns ``GraderScore | GraderError``, so code that
handles the error may read ``result.score`` as it is. Rankings are listwise graders'
(:mod:`openjudge.graders.comparison`).

Blame: a lone surrogate in one of :attr:`LLMGrader.response_inputs` is the response's failure
(cause ``lone_surrogate``); in any other input it is a bad dataset field (``invalid_input``).
So is a prompt past the judge's context window that fits without those inputs (cause
``response_too_long``); one that does not is ``invalid_input``. A degenerate value of one of
them (empty, punctuation only, a reasoning opener alone: a "master key" judges accept) is
scored at the bottom without a call (cause ``degenerate_response``) unless
``reject_degenerate=False``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, cast

from openjudge.graders._degenerate import CAUSE as DEGENERATE
from openjudge.graders._degenerate import degenerate_reason
from openjudge.graders._judge_output import JudgeVerdict
from openjudge.graders.base_grader import InputSpec, error_from_exception, response_failure_result
from openjudge.graders.blame import check_response_text
from openjudge.graders.judge_grader import (
    JudgeGrader,
    PreparedCall,
    ScoreMode,
    VerdictT,
    fmt_number,
    pointwise_result,
)
from openjudge.models.chat_model import ChatModel, Sampling
from openjudge.models.schema.oai.message import ChatMessage
from openjudge.models.schema.prompt_template import LanguageEnum, PromptTemplate
from openjudge.results import (
    GraderError,
    GraderMode,
    GraderRank,
    GraderScore,
    ResponseFailure,
    ScoreRange,
    TokenUsage,
)

__all__ = ["JudgeGrader", "JudgeVerdict", "LLMGrader", "PreparedCall"]

_VERDICT_CORE = frozenset({"score", "reason"})


class LLMGrader(JudgeGrader[VerdictT, None]):
    """A grader that fills a prompt template and asks a chat model for a structured verdict.

    Args:
        model: The judge (any :class:`~openjudge.models.chat_model.ChatModel`).
        name: Result name.
        mode: Pointwise or listwise.
        language: Which of the template's languages to use (default English).
        description: One line on what is judged.
        template: A user prompt string, a list of messages, or a :class:`PromptTemplate`.
            ``{field}`` placeholders are the grader's inputs; ``{{``/``}}`` are literal braces.
        structured_model: The pydantic model the reply must validate against (default
            :class:`JudgeVerdict`: ``reason`` and ``score``). Unless a subclass overrides
            :meth:`to_result`, it must declare a numeric ``score``.
        score_range: The raw score range; scores outside it are rejected (re-asked).
        sampling: Sampling overrides for this grader's calls.
        max_reasks: Re-asks after an invalid reply (0 or 1 is sensible).
        delimit_inputs: Wrap each inserted value in ``<name>`` tags.
        score_mode: ``"verdict"``, ``"logprobs"`` or ``"vote"``; see
            :class:`~openjudge.graders.judge_grader.JudgeGrader`.
        top_logprobs: Alternatives requested per token in ``"logprobs"`` mode.
        votes: Verdicts sampled at most in ``"vote"`` mode.
        reject_degenerate: Score a degenerate response (empty, punctuation only, or only a
            reasoning opener such as "Let's think step by step.") at the bottom of the range
            without a judge call (cause ``degenerate_response``; see
            :mod:`openjudge.graders._degenerate`). Judges accept such "master keys" as correct.
    """

    response_inputs: ClassVar[frozenset[str]] = frozenset(
        {
            "response",
            "answer",
            "completion",
            "output",
            "prediction",
            "predicted",
            "generation",
            "solution",
            "final_answer",
        }
    )
    """Inputs the graded response wrote: their faults (a lone surrogate) are the response's.
    Any other input is a dataset field, whose faults are the system's."""

    def __init__(
        self,
        model: ChatModel,
        name: str = "",
        mode: GraderMode = GraderMode.POINTWISE,
        language: LanguageEnum | str | None = None,
        description: str = "",
        template: str | Sequence[ChatMessage | Mapping[str, Any]] | PromptTemplate | None = None,
        structured_model: type[VerdictT] | None = None,
        *,
        score_range: ScoreRange | tuple[float, float] | None = None,
        sampling: Sampling | None = None,
        max_reasks: int = 1,
        delimit_inputs: bool = True,
        score_mode: ScoreMode = "verdict",
        top_logprobs: int = 5,
        votes: int = 5,
        reject_degenerate: bool = True,
    ) -> None:
        # Without a structured_model, VerdictT is its default, JudgeVerdict (``LLMGrader(...)``
        # is ``LLMGrader[JudgeVerdict]``): the one place the checker is told so.
        verdict_model = structured_model or cast("type[VerdictT]", JudgeVerdict)
        super().__init__(
            model,
            name,
            mode,
            language,
            description,
            template,
            verdict_model,
            score_range=score_range,
            sampling=sampling,
            max_reasks=max_reasks,
            delimit_inputs=delimit_inputs,
            score_mode=score_mode,
            top_logprobs=top_logprobs,
            votes=votes,
        )
        fields = verdict_model.model_fields
        self._reads_score = type(self).to_result is LLMGrader.to_result
        if self._reads_score and "score" not in fields:
            raise ValueError(
                f"{self.name}: structured_model {verdict_model.__name__} has no 'score' field; "
                "add one, or subclass LLMGrader and override to_result to read your verdict"
            )
        self._has_extra_fields = bool(set(fields) - _VERDICT_CORE)
        self._spec = InputSpec(required=self._prompt.placeholders, optional=frozenset(), accepts_any=False)
        # Only inputs the prompt uses reach the judge, so only those are checked as the response's.
        self._response_fields = tuple(sorted(self.response_inputs & self._prompt.placeholders))
        self.reject_degenerate = reject_degenerate

    def input_spec(self) -> InputSpec:
        """The template's placeholders, unless a subclass defines its own ``aevaluate``."""
        if type(self).aevaluate is not LLMGrader.aevaluate:
            return super().input_spec()
        return self._spec

    def prepare_call(self, inputs: Mapping[str, object]) -> PreparedCall[None] | GraderError:
        """The template filled with ``inputs``, or why they cannot fill it."""
        if not inputs.keys() >= self._spec.required:
            missing = self._spec.missing(inputs)
            return GraderError(
                name=self.name,
                kind="invalid_input",
                message=f"missing input {', '.join(repr(m) for m in missing)} for grader {self.name!r}",
                error_type="TypeError",
            )
        try:
            return PreparedCall(self.build_messages(inputs), None)
        except Exception as exc:
            return error_from_exception(self.name, exc, "invalid_input")

    async def aevaluate(self, **inputs: object) -> GraderScore | GraderError:
        for field in self._response_fields:
            value = inputs.get(field)
            if not isinstance(value, str):
                continue
            if not value.isascii():  # ASCII has no lone surrogate
                try:
                    check_response_text(f"input {field!r}", value)
                except ResponseFailure as failure:
                    return response_failure_result(self, failure)
            if self.reject_degenerate:
                reason = degenerate_reason(value)
                if reason is not None:
                    return response_failure_result(
                        self, ResponseFailure(DEGENERATE, f"input {field!r}: {reason}")
                    )
        call = self.prepare_call(inputs)
        if isinstance(call, GraderError):
            return call
        judged = await self.judge(call)
        if type(judged) is GraderScore:  # the usual outcome: nothing to check or blame
            return judged
        result = pointwise_result(self, judged)
        if isinstance(result, GraderError) and self._response_fields:
            blank = {**inputs, **dict.fromkeys(self._response_fields, "")}
            return self.blame_overflow(result, call, blank)
        return result

    def to_result(self, verdict: VerdictT, call: PreparedCall[None]) -> GraderScore:
        """The verdict as a score: see :meth:`score_verdict`."""
        return self.score_verdict(verdict)

    def _result(
        self,
        verdict: VerdictT,
        call: PreparedCall[None],
        usage: TokenUsage,
        latency_s: float,
        queue_s: float | None,
    ) -> GraderScore | GraderRank:
        if self._reads_score:  # the default reading builds its score with the usage at once
            return self.score_verdict(verdict, usage=usage, latency_s=latency_s, queue_s=queue_s)
        return super()._result(verdict, call, usage, latency_s, queue_s)

    def score_verdict(
        self,
        verdict: VerdictT,
        *,
        usage: TokenUsage | None = None,
        latency_s: float | None = None,
        queue_s: float | None = None,
    ) -> GraderScore:
        """The verdict's ``score`` (checked against the range) and ``reason``; other fields go to metadata.

        ``score`` is read by name: any verdict model that declares it works (checked at
        construction), so its value is checked here to be a finite number. Override this (not
        :meth:`to_result`) to add to a score read this way, as the common judges add ``passed``.

        Raises:
            ValueError: The score is not a finite number or is outside the range.
        """
        score: object = getattr(verdict, "score", None)
        if not isinstance(score, (int, float)) or isinstance(score, bool):
            raise ValueError(f"score must be a finite number, got {score!r}")
        value = float(score)
        if not math.isfinite(value):
            raise ValueError(f"score must be a finite number, got {score!r}")
        rng = self.score_range
        if rng is not None and not rng.low <= value <= rng.high:
            raise ValueError(
                f"score {fmt_number(value)} is outside the range "
                f"{fmt_number(rng.low)} to {fmt_number(rng.high)}"
            )
        metadata = (
            verdict.model_dump(mode="json", exclude=set(_VERDICT_CORE)) if self._has_extra_fields else {}
        )
        # Checked above: a finite float in the range; metadata is the verdict's JSON dump.
        return GraderScore._checked(
            self.name,
            value,
            str(getattr(verdict, "reason", "")),
            metadata,
            rng,
            usage,
            latency_s,
            queue_s,
        )
