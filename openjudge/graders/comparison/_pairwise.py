"""PairwisePreferenceGrader: which of two responses is better, judged in both orders.

LLM judges favour a position (often the first). Each pair is therefore judged twice,
concurrently: once as (A, B) and once as (B, A), and the swapped verdict is mapped
back. The score is P(A better) (see :mod:`~openjudge.graders.comparison._orders`):

==============================================  =====  ==========
the two orders say                              score  confidence
==============================================  =====  ==========
A and A                                         1.0    1.0
B and B                                         0.0    1.0
tie and tie                                     0.5    1.0
a winner and a tie (a flip)                     0.5    0.5
A and B (a flip)                                0.5    0.0
==============================================  =====  ==========

A failed call in either order makes the result a :class:`GraderError` (never a guessed
score), with the usage of both calls.
"""

from __future__ import annotations

import time

import anyio

from openjudge.graders.base_grader import grader_boundary
from openjudge.graders.comparison._calls import compare_into, first_failure, total_usage
from openjudge.graders.comparison._inputs import check_text, sendable_response
from openjudge.graders.comparison._judged import PairwiseJudgedGrader
from openjudge.graders.comparison._orders import combine_orders
from openjudge.graders.comparison._pairwise_judge import OrderVerdict
from openjudge.graders.comparison._verdicts import Winner
from openjudge.graders.comparison.prompts import TemplateLike
from openjudge.models.chat_model import ChatModel, Sampling
from openjudge.models.schema.prompt_template import LanguageEnum
from openjudge.results import GraderError, GraderMode, GraderScore, ScoreRange

__all__ = ["PairwisePreferenceGrader"]

_ORDERS = ("A,B", "B,A")


class PairwisePreferenceGrader(PairwiseJudgedGrader):
    """Prefer ``response_a`` or ``response_b``, debiased for position (score P(A better) in [0, 1]).

    Metadata: ``winner`` (``"A"``, ``"B"`` or ``"tie"``), ``flip`` (the orders disagreed),
    ``confidence``, and ``verdicts``: for each order shown (``"A,B"``, ``"B,A"``) the
    judge's ``raw_winner`` (a position), the ``winner`` it means for the pair, and the reason.
    ``usage`` sums both calls; ``latency_s`` is their wall time (they run concurrently).

    Args:
        model: The judge.
        template: A custom prompt with ``{response_a}``, ``{response_b}`` and optionally
            ``{query}`` and ``{reference}``; ``None`` for the built-in EN/ZH prompts.
        criteria: What "better" means, for the built-in prompts (``None``: helpful,
            correct and relevant).
        language: Prompt language.
        sampling: Sampling overrides for the judge calls.
        name: Result name.
    """

    default_name = "pairwise_preference"
    default_score_range = ScoreRange(low=0.0, high=1.0)

    def __init__(
        self,
        model: ChatModel,
        *,
        template: TemplateLike | None = None,
        criteria: str | None = None,
        language: LanguageEnum | str = LanguageEnum.EN,
        sampling: Sampling | None = None,
        name: str = "",
    ) -> None:
        super().__init__(
            model,
            name=name,
            mode=GraderMode.POINTWISE,
            description="Which of two responses is better, judged in both orders",
            template=template,
            criteria=criteria,
            language=language,
            sampling=sampling,
        )

    @grader_boundary
    async def aevaluate(
        self,
        *,
        query: str,
        response_a: str,
        response_b: str,
        reference: str | None = None,
    ) -> GraderScore | GraderError:
        judge, base = self.judge_for(query, reference)
        a = sendable_response(check_text("response_a", response_a))
        b = sendable_response(check_text("response_b", response_b))
        verdicts: list[OrderVerdict | GraderError | None] = [None, None]
        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(compare_into, judge, {**base, "response_a": a, "response_b": b}, verdicts, 0)
            tg.start_soon(compare_into, judge, {**base, "response_a": b, "response_b": a}, verdicts, 1)
        latency_s = time.monotonic() - started
        failure = first_failure(self.name, _ORDERS, verdicts, latency_s=latency_s)
        if failure is not None:
            return failure
        forward, swapped = verdicts
        assert isinstance(forward, OrderVerdict) and isinstance(swapped, OrderVerdict)
        agreement = combine_orders(forward.winner, swapped.winner)
        return GraderScore(
            name=self.name,
            score=agreement.score,
            reason=_reason(agreement.winner, agreement.flip, forward.reason, swapped.reason),
            metadata={
                "winner": agreement.winner,
                "flip": agreement.flip,
                "confidence": agreement.confidence,
                "verdicts": [
                    _verdict(_ORDERS[0], forward, agreement.forward),
                    _verdict(_ORDERS[1], swapped, agreement.backward),
                ],
            },
            score_range=self.score_range,
            usage=total_usage(verdicts),
            latency_s=latency_s,
        )


def _verdict(order: str, verdict: OrderVerdict, meaning: Winner) -> dict[str, str]:
    return {"order": order, "raw_winner": verdict.winner, "winner": meaning, "reason": verdict.reason}


def _reason(winner: Winner, flip: bool, forward: str, swapped: str) -> str:
    if flip:
        head = "The two orders disagree, so this is a tie."
    elif winner == "tie":
        head = "Both orders judge a tie."
    else:
        head = f"Response {winner} is better in both orders."
    return f"{head}\n[A shown first] {forward}\n[B shown first] {swapped}"
