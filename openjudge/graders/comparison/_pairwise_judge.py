"""One ordered comparison: is the response shown as A or the one shown as B better?

:class:`PairwiseJudge` is an :class:`~openjudge.graders.llm_grader.LLMGrader`, so each
call gets safe templating, structured output, validation, the re-ask and typed
errors. The pairwise and tournament graders run it in both orders and combine the
two verdicts (:func:`~openjudge.graders.comparison._orders.combine_orders`).

A degenerate response (empty, punctuation only, a reasoning opener alone: see
:mod:`openjudge.graders._degenerate`) forfeits without a call, unless the grader is built with
``reject_degenerate=False``. A comparison whose prompt is longer than the judge's context
window is decided without the judge when responses made it long: a response without which the prompt would have fit
(:func:`~openjudge.graders.blame.overflow_failure`) forfeits, so the other wins (both
forfeit: a tie). A prompt too long without the responses is an ``invalid_input`` error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from openjudge.errors import ContextOverflow
from openjudge.graders._degenerate import degenerate_reason
from openjudge.graders.base_grader import InvalidInputError, error_from_exception
from openjudge.graders.blame import context_overflow_of, message_chars, overflow_failure
from openjudge.graders.comparison._orders import FIRST_WINS
from openjudge.graders.comparison._verdicts import PairwiseVerdict, Winner
from openjudge.graders.comparison.prompts import (
    TemplateLike,
    as_template,
    check_placeholders,
    pairwise_template,
)
from openjudge.graders.llm_grader import LLMGrader, PreparedCall
from openjudge.models.chat_model import ChatModel, Sampling
from openjudge.models.schema.prompt_template import LanguageEnum, PromptTemplate
from openjudge.results import GraderError, GraderMode, GraderScore, ScoreRange, TokenUsage

__all__ = ["OrderVerdict", "PairwiseJudge", "PairwiseJudges"]

_WINNERS: dict[object, Winner] = {"A": "A", "B": "B", "tie": "tie"}
_UNIT = ScoreRange(low=0.0, high=1.0)
_PAIR_INPUTS = frozenset({"query", "response_a", "response_b", "reference"})
_RESPONSE_SLOTS = ("response_a", "response_b")


@dataclass(frozen=True, slots=True)
class OrderVerdict:
    """The validated verdict of one ordered comparison.

    Attributes:
        winner: The winning position as the judge saw it (A is the response shown first).
        reason: The judge's reason.
        usage: Tokens and requests spent (re-asks included).
        latency_s: Wall time of the call(s).
    """

    winner: Winner
    reason: str
    usage: TokenUsage
    latency_s: float


class PairwiseJudge(LLMGrader[PairwiseVerdict]):
    """Compare ``{response_a}`` (shown first) with ``{response_b}`` (shown second).

    As a grader on its own it returns ``GraderScore(score=P(A better))``: 1.0 for "A",
    0.5 for "tie", 0.0 for "B", with ``metadata["winner"]``. It judges one order only;
    :class:`~openjudge.graders.comparison._pairwise.PairwisePreferenceGrader` judges both.

    Args:
        model: The judge.
        template: A prompt with ``{response_a}``, ``{response_b}`` and optionally
            ``{query}`` and ``{reference}``.
        name: Result name.
        language: Prompt language.
        sampling: Sampling overrides for the judge calls.
    """

    default_name = "pairwise_judge"
    blame_refusals = False  # two responses in one call: a refusal cannot be pinned on one

    def __init__(
        self,
        model: ChatModel,
        template: PromptTemplate,
        *,
        name: str = "",
        language: LanguageEnum | str = LanguageEnum.EN,
        sampling: Sampling | None = None,
        reject_degenerate: bool = True,
    ) -> None:
        super().__init__(
            model,
            name=name or self.default_name,
            mode=GraderMode.POINTWISE,
            language=language,
            description="Which of two responses, in the order shown, is better",
            template=template,
            structured_model=PairwiseVerdict,
            sampling=sampling,
            reject_degenerate=reject_degenerate,
        )

    async def compare(
        self, values: Mapping[str, object], responses: Sequence[str] = _RESPONSE_SLOTS
    ) -> OrderVerdict | GraderError:
        """Judge one order; never raises (failures come back as :class:`GraderError`).

        Args:
            values: The template's placeholder values.
            responses: The placeholders that hold graded responses (an anchor answer is the
                dataset's: it never forfeits).
        """
        try:
            if self.reject_degenerate:
                empty = [slot for slot in responses if _degenerate(values.get(slot))]
                if empty:
                    return _forfeited(
                        {_POSITION[slot] for slot in empty}, "has no content (a degenerate response)"
                    )
            call = self.prepare_call(values)
            if isinstance(call, GraderError):
                return call
            result = await self.judge(call)
            if isinstance(result, GraderError):
                overflow = context_overflow_of(result)
                if overflow is None:
                    return result
                return self._forfeit(result, overflow, message_chars(call.messages), values, responses)
            winner = _WINNERS.get(result.metadata.get("winner"))
            if not isinstance(result, GraderScore) or winner is None:
                raise TypeError(f"{self.name}: to_result must return a GraderScore with a winner")
            return OrderVerdict(winner, result.reason, result.usage or TokenUsage(), result.latency_s or 0.0)
        except Exception as exc:
            return error_from_exception(self.name, exc)

    def _forfeit(
        self,
        error: GraderError,
        overflow: ContextOverflow,
        prompt_chars: int,
        values: Mapping[str, object],
        responses: Sequence[str],
    ) -> OrderVerdict | GraderError:
        """The verdict of a comparison too long for the judge: responses that made it long forfeit."""

        def rest_chars(blank: Sequence[str]) -> int | None:
            call = self.prepare_call({**values, **dict.fromkeys(blank, "")})
            return None if isinstance(call, GraderError) else message_chars(call.messages)

        def fits_without(blank: Sequence[str]) -> bool:
            rest = rest_chars(blank)
            return rest is not None and (
                overflow_failure(overflow, prompt_chars=prompt_chars, rest_chars=rest) is not None
            )

        long = [slot for slot in responses if fits_without([slot])]
        if not long and len(responses) > 1 and fits_without(responses):
            long = list(responses)  # neither alone, but together: both are too long
        if not long:
            return error.model_copy(
                update={
                    "kind": "invalid_input",
                    "message": f"{error.message} (the comparison is too long for the judge even without the "
                    "responses: shorten the template, query or reference, or use a judge with a longer context)",
                }
            )
        lost = {_POSITION[slot] for slot in long}
        return _forfeited(
            lost,
            f"is too long for the judge ({overflow.describe()})",
            error.usage or TokenUsage(),
            error.latency_s or 0.0,
        )

    def to_result(self, verdict: PairwiseVerdict, call: PreparedCall[None]) -> GraderScore:
        return GraderScore(
            name=self.name,
            score=FIRST_WINS[verdict.winner],
            reason=verdict.reason,
            metadata={"winner": verdict.winner},
            score_range=_UNIT,
        )


_POSITION = {"response_a": "A", "response_b": "B"}


def _degenerate(value: object) -> bool:
    return isinstance(value, str) and degenerate_reason(value) is not None


def _forfeited(
    lost: set[str], why: str, usage: TokenUsage | None = None, latency_s: float = 0.0
) -> OrderVerdict:
    """The verdict without the judge when the responses at positions ``lost`` forfeit (both: a tie)."""
    winner: Winner = "tie" if lost == {"A", "B"} else ("B" if "A" in lost else "A")
    shown = " and ".join(f"shown as {position}" for position in sorted(lost))
    reason = f"the response {shown} {why}: {'both forfeit' if winner == 'tie' else 'it forfeits'}"
    return OrderVerdict(winner, reason, usage or TokenUsage(), latency_s)


class PairwiseJudges:
    """The judge(s) a two-order grader uses: with and/or without a reference answer.

    With the default prompts there is one judge per case. A custom template serves one
    case: with ``{reference}`` a reference is required, without it none may be given.

    Args:
        model: The judge.
        name: Name of the grader using these judges (errors carry it).
        template: A custom prompt (see :class:`PairwiseJudge`), or ``None`` for the defaults.
        criteria: What "better" means in the default prompts (``None``: the language's default).
        language: Prompt language.
        sampling: Sampling overrides for the judge calls.
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        name: str,
        template: TemplateLike | None,
        criteria: str | None,
        language: LanguageEnum,
        sampling: Sampling | None,
        reject_degenerate: bool = True,
    ) -> None:
        self.name = name

        def judge(prompt: PromptTemplate) -> PairwiseJudge:
            return PairwiseJudge(
                model,
                prompt,
                name=name,
                language=language,
                sampling=sampling,
                reject_degenerate=reject_degenerate,
            )

        self.plain: PairwiseJudge | None = None
        self.with_reference: PairwiseJudge | None = None
        if template is None:
            self.plain = judge(pairwise_template(language, criteria, with_reference=False))
            self.with_reference = judge(pairwise_template(language, criteria, with_reference=True))
            return
        if criteria is not None:
            raise ValueError(f"{name}: criteria applies to the default prompts; write it into your template")
        custom = as_template(template)
        found = check_placeholders(
            name, custom, language, allowed=_PAIR_INPUTS, required=frozenset({"response_a", "response_b"})
        )
        if "reference" in found:
            self.with_reference = judge(custom)
        else:
            self.plain = judge(custom)

    def pick(self, reference: str | None) -> PairwiseJudge:
        """The judge for a sample with (or without) a reference answer.

        Raises:
            InvalidInputError: The custom template cannot take (or needs) the reference.
        """
        if reference is None:
            if self.plain is None:
                raise InvalidInputError(f"reference: the template of {self.name!r} needs a reference answer")
            return self.plain
        if not isinstance(reference, str):
            raise InvalidInputError(f"reference: expected a string, got {type(reference).__name__}")
        if self.with_reference is None:
            raise InvalidInputError(
                f"reference: the template of {self.name!r} has no {{reference}} placeholder; "
                "add one or do not map a reference"
            )
        return self.with_reference
