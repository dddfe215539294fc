"""GroupTournamentGrader: a debiased all-pairs tournament scoring each response of a group.

For a GRPO group of N responses to one query, every pair (i, j) is judged in both
orders, (i, j) and (j, i): N(N-1) judge calls, run concurrently (at most
``max_concurrency`` at once; the provider's own limits apply as well). A pair counts
as a win for i only if both orders prefer i; a tie, or orders that disagree, count as
neither. Then (see :mod:`~openjudge.graders.comparison._tournament`)::

    reward_i = (wins_i - losses_i) / (N - 1)        in [-1, 1]

and ``scores`` (in [0, 1]) by Borda, ``(wins_i + ties_i / 2) / (N - 1)``, or by
Bradley–Terry (:mod:`~openjudge.graders.comparison._ratings`).

A pair with a failed call is left out, and both its responses are *failed members*
(their record is incomplete): ``scores`` and ``rewards`` are ``null`` for them. Every
other response met every other, so its score is exact. The result is one
:class:`GraderRank` per group (see :mod:`~openjudge.graders.comparison._group`), or a
:class:`GraderError` when no response is left.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence

import anyio
from pydantic import JsonValue

from openjudge.graders.base_grader import grader_boundary
from openjudge.graders.comparison._calls import compare_into, failure_of, total_usage
from openjudge.graders.comparison._group import MemberError, finish_group, format_scores
from openjudge.graders.comparison._inputs import check_responses
from openjudge.graders.comparison._judged import PairwiseJudgedGrader
from openjudge.graders.comparison._orders import combine_orders
from openjudge.graders.comparison._pairwise_judge import OrderVerdict
from openjudge.graders.comparison._ratings import GroupScoring, check_scoring, scores_from_outcomes
from openjudge.graders.comparison._tournament import PairOutcome, tournament_tally
from openjudge.graders.comparison.prompts import TemplateLike
from openjudge.models.chat_model import ChatModel, Sampling
from openjudge.models.schema.prompt_template import LanguageEnum
from openjudge.results import GraderError, GraderMode, GraderRank

__all__ = ["GroupTournamentGrader"]


class GroupTournamentGrader(PairwiseJudgedGrader):
    """Score each response of a group by a position-debiased all-pairs tournament.

    Metadata, besides ``scores``, ``member_errors`` and ``scoring`` (see
    :mod:`~openjudge.graders.comparison._group`): ``rewards`` ((wins - losses) / (N - 1)
    per response, ``null`` for a failed member), ``wins``, ``losses``, ``flips`` (pairs
    whose two orders disagreed), ``flip_rate`` (flips / decided pairs), ``matches``
    (``[i, j, winner]`` per decided pair; ``winner`` is ``null`` for no decision) and
    ``failed_pairs`` (``[i, j]`` per pair with a failed call). ``usage`` sums every call;
    ``latency_s`` is the wall time of the whole tournament.

    Args:
        model: The judge.
        template: A custom pairwise prompt with ``{response_a}``, ``{response_b}`` and
            optionally ``{query}`` and ``{reference}``; ``None`` for the built-in prompts.
        criteria: What "better" means, for the built-in prompts.
        language: Prompt language.
        sampling: Sampling overrides for the judge calls.
        max_concurrency: Judge calls of one group in flight at once.
        scoring: ``"borda"`` or ``"bradley_terry"`` for ``scores``.
        name: Result name.
    """

    default_name = "group_tournament"

    def __init__(
        self,
        model: ChatModel,
        *,
        template: TemplateLike | None = None,
        criteria: str | None = None,
        language: LanguageEnum | str = LanguageEnum.EN,
        sampling: Sampling | None = None,
        max_concurrency: int = 16,
        scoring: GroupScoring = "borda",
        name: str = "",
    ) -> None:
        super().__init__(
            model,
            name=name,
            mode=GraderMode.LISTWISE,
            description="Debiased all-pairs tournament scores for a group of responses",
            template=template,
            criteria=criteria,
            language=language,
            sampling=sampling,
            max_concurrency=max_concurrency,
        )
        self.max_concurrency = max_concurrency
        self.scoring = check_scoring(self.name, scoring)

    @grader_boundary
    async def aevaluate(
        self,
        *,
        query: str,
        responses: Sequence[str],
        reference: str | None = None,
    ) -> GraderRank | GraderError:
        judge, base = self.judge_for(query, reference)
        texts = check_responses(responses)
        n = len(texts)
        pairs = list(itertools.combinations(range(n), 2))
        # Call 2p shows pair p as (i, j); call 2p + 1 shows it as (j, i).
        calls = [order for i, j in pairs for order in ((i, j), (j, i))]
        verdicts: list[OrderVerdict | GraderError | None] = [None] * len(calls)
        limiter = anyio.CapacityLimiter(self.max_concurrency)
        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            for k, (first, second) in enumerate(calls):
                values = {**base, "response_a": texts[first], "response_b": texts[second]}
                tg.start_soon(compare_into, judge, values, verdicts, k, limiter)
        latency_s = time.monotonic() - started
        errors: list[MemberError | None] = [None] * n
        outcomes: list[PairOutcome] = []
        failed_pairs: list[JsonValue] = []
        flips = 0
        for p, (i, j) in enumerate(pairs):
            forward, swapped = verdicts[2 * p], verdicts[2 * p + 1]
            failure = failure_of(forward) or failure_of(swapped)
            if failure is not None:
                failed_pairs.append([i, j])
                for member, other in ((i, j), (j, i)):
                    if errors[member] is None:
                        errors[member] = MemberError.of(failure, f"vs response {other}: ")
                continue
            assert isinstance(forward, OrderVerdict) and isinstance(swapped, OrderVerdict)
            agreement = combine_orders(forward.winner, swapped.winner)
            flips += agreement.flip
            outcomes.append(PairOutcome(i, j, {"A": i, "B": j}.get(agreement.winner)))
        wins, losses = tournament_tally(outcomes, n)
        scores = scores_from_outcomes(outcomes, n, self.scoring)
        failed = [k for k in range(n) if errors[k] is not None]
        scores = [None if k in failed else s for k, s in enumerate(scores)]
        rewards = [None if k in failed else (wins[k] - losses[k]) / (n - 1) for k in range(n)]
        decided = len(outcomes)
        reason = (
            f"{decided} of {len(pairs)} pairs judged in both orders, {flips} inconsistent"
            + (f", {len(failed_pairs)} failed (responses {failed} unscored)" if failed_pairs else "")
            + f"; {self.scoring} scores: "
            + format_scores(scores)
        )
        return finish_group(
            self.name,
            scores,
            errors,
            scoring=self.scoring,
            reason=reason,
            metadata={
                "rewards": list(rewards),
                "wins": list(wins),
                "losses": list(losses),
                "flips": flips,
                "flip_rate": flips / decided if decided else 0.0,
                "matches": [[o.i, o.j, o.winner] for o in outcomes],
                "failed_pairs": failed_pairs,
            },
            usage=total_usage(verdicts),
            latency_s=latency_s,
        )
