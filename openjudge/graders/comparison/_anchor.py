"""AnchorComparisonGrader: each response of a group against one anchor response, N calls.

The anchor is a fixed response to beat: a reference solution, the previous policy's
answer, a strong model's answer. Each of the N responses is compared with it once (N
calls, concurrently), or in both orders with ``both_orders=True`` (2N calls). The score
is P(response better than the anchor): 1.0 for a win, 0.5 for a tie (or, in both
orders, a disagreement), 0.0 for a loss.

The anchor is shown first (as response A) in the single-order mode: every call of the
group then shares the instructions, the query and the anchor as one prompt prefix, which
a vLLM or SGLang judge serves from its prefix cache. The position bias this leaves is
the same for every response of the group, so it shifts their scores together rather
than reordering them. A response whose call failed is a failed member (no score).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import anyio

from openjudge.graders.base_grader import grader_boundary
from openjudge.graders.comparison._calls import compare_into, failure_of, total_usage
from openjudge.graders.comparison._group import MemberError, finish_group, format_scores
from openjudge.graders.comparison._inputs import check_responses, check_text, sendable_response
from openjudge.graders.comparison._judged import PairwiseJudgedGrader
from openjudge.graders.comparison._orders import FIRST_WINS, combine_orders
from openjudge.graders.comparison._pairwise_judge import OrderVerdict
from openjudge.graders.comparison.prompts import TemplateLike
from openjudge.models.chat_model import ChatModel, Sampling
from openjudge.models.schema.prompt_template import LanguageEnum
from openjudge.results import GraderError, GraderMode, GraderRank

__all__ = ["AnchorComparisonGrader"]


class AnchorComparisonGrader(PairwiseJudgedGrader):
    """Score each response of a group by P(it is better than the anchor).

    Metadata, besides ``scores``, ``member_errors`` and ``scoring`` (``"anchor"``; see
    :mod:`~openjudge.graders.comparison._group`): ``verdicts``, per response the winner
    of each call as the judge saw it (``"A"`` is whatever was shown first).

    Args:
        model: The judge.
        template: A custom pairwise prompt (``{response_a}`` is the anchor in the first
            order); ``None`` for the built-in prompts.
        criteria: What "better" means, for the built-in prompts.
        language: Prompt language.
        sampling: Sampling overrides for the judge calls.
        both_orders: Also judge each response shown first (2N calls).
        max_concurrency: Judge calls of one group in flight at once.
        name: Result name.
    """

    default_name = "anchor_comparison"

    def __init__(
        self,
        model: ChatModel,
        *,
        template: TemplateLike | None = None,
        criteria: str | None = None,
        language: LanguageEnum | str = LanguageEnum.EN,
        sampling: Sampling | None = None,
        both_orders: bool = False,
        max_concurrency: int = 16,
        name: str = "",
    ) -> None:
        super().__init__(
            model,
            name=name,
            mode=GraderMode.LISTWISE,
            description="Each response of a group against an anchor response",
            template=template,
            criteria=criteria,
            language=language,
            sampling=sampling,
            max_concurrency=max_concurrency,
        )
        self.both_orders = both_orders
        self.max_concurrency = max_concurrency

    @grader_boundary
    async def aevaluate(
        self,
        *,
        query: str,
        responses: Sequence[str],
        anchor: str,
        reference: str | None = None,
    ) -> GraderRank | GraderError:
        judge, base = self.judge_for(query, reference)
        anchor_text = sendable_response(check_text("anchor", anchor))
        texts = check_responses(responses, minimum=1)
        n = len(texts)
        per_member = 2 if self.both_orders else 1
        verdicts: list[OrderVerdict | GraderError | None] = [None] * (n * per_member)
        limiter = anyio.CapacityLimiter(self.max_concurrency)
        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            for k, text in enumerate(texts):
                anchored = {**base, "response_a": anchor_text, "response_b": text}
                tg.start_soon(compare_into, judge, anchored, verdicts, k * per_member, limiter)
                if self.both_orders:
                    swapped = {**base, "response_a": text, "response_b": anchor_text}
                    tg.start_soon(compare_into, judge, swapped, verdicts, k * per_member + 1, limiter)
        latency_s = time.monotonic() - started
        scores: list[float | None] = [None] * n
        errors: list[MemberError | None] = [None] * n
        shown: list[list[str] | None] = [None] * n
        for k in range(n):
            calls = verdicts[k * per_member : (k + 1) * per_member]
            failure = next((f for v in calls if (f := failure_of(v)) is not None), None)
            if failure is not None:
                errors[k] = MemberError.of(failure)
                continue
            winners = [v.winner for v in calls if isinstance(v, OrderVerdict)]
            shown[k] = list(winners)
            # P(anchor better) from the anchor-first order (and its swap, if judged).
            p_anchor = FIRST_WINS[winners[0]] if len(winners) == 1 else combine_orders(*winners).score
            scores[k] = 1.0 - p_anchor
        reason = (
            f"{n} responses against the anchor ({len(verdicts)} calls); P(better than anchor): "
            + format_scores(scores, digits=2)
        )
        return finish_group(
            self.name,
            scores,
            errors,
            scoring="anchor",
            reason=reason,
            metadata={"verdicts": [None if v is None else list(v) for v in shown]},
            usage=total_usage(verdicts),
            latency_s=latency_s,
        )
