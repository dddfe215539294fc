"""KnockoutTournamentGrader: a single-elimination bracket over a group, N - 1 matches.

The responses enter a bracket in input order: round 1 pairs (0, 1), (2, 3), ...; an odd
one out gets a bye. Each match is one judge call (two with ``both_orders=True``); the
winner goes on, the matches of a round run concurrently, and there are
``ceil(log2 N)`` rounds, so the group's judging takes that many call latencies.

Position bias: with one call per match, which response is shown first alternates from
match to match, so no response is favoured systematically. A tie (or, with both orders,
a disagreement) sends the earlier response on: the order of a GRPO group's sessions
carries no information about quality, so this adds noise, not bias.

Scores: Borda is the share of rounds a response survived (byes count), so the winner
gets 1 and the first-round losers 0; Bradley–Terry fits strengths to the matches played.
A match whose call failed eliminates both its responses as *failed members* (no score);
their next opponent gets a bye.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import anyio
from pydantic import JsonValue

from openjudge.graders.base_grader import grader_boundary
from openjudge.graders.comparison._calls import compare_into, failure_of, total_usage
from openjudge.graders.comparison._group import MemberError, finish_group, format_scores
from openjudge.graders.comparison._inputs import check_responses
from openjudge.graders.comparison._judged import PairwiseJudgedGrader
from openjudge.graders.comparison._orders import combine_orders, swap
from openjudge.graders.comparison._pairwise_judge import OrderVerdict, PairwiseJudge
from openjudge.graders.comparison._ratings import GroupScoring, bradley_terry_scores, check_scoring
from openjudge.graders.comparison._tournament import PairOutcome
from openjudge.graders.comparison._verdicts import Winner
from openjudge.graders.comparison.prompts import TemplateLike
from openjudge.models.chat_model import ChatModel, Sampling
from openjudge.models.schema.prompt_template import LanguageEnum
from openjudge.results import GraderError, GraderMode, GraderRank, TokenUsage

__all__ = ["KnockoutTournamentGrader"]


class KnockoutTournamentGrader(PairwiseJudgedGrader):
    """Score each response of a group by how far it gets in a knockout bracket.

    Metadata, besides ``scores``, ``member_errors`` and ``scoring`` (see
    :mod:`~openjudge.graders.comparison._group`): ``rounds`` (``ceil(log2 N)``),
    ``survived`` (rounds survived per response) and ``matches`` (``[round, i, j,
    winner]`` per match played; ``winner`` is ``null`` when the match failed).

    Args:
        model: The judge.
        template: A custom pairwise prompt (see :class:`PairwiseJudge`); ``None`` for the
            built-in prompts.
        criteria: What "better" means, for the built-in prompts.
        language: Prompt language.
        sampling: Sampling overrides for the judge calls.
        both_orders: Judge each match in both orders (2(N - 1) calls instead of N - 1).
        scoring: ``"borda"`` (rounds survived / rounds) or ``"bradley_terry"``.
        name: Result name.
    """

    default_name = "knockout_tournament"

    def __init__(
        self,
        model: ChatModel,
        *,
        template: TemplateLike | None = None,
        criteria: str | None = None,
        language: LanguageEnum | str = LanguageEnum.EN,
        sampling: Sampling | None = None,
        both_orders: bool = False,
        scoring: GroupScoring = "borda",
        name: str = "",
    ) -> None:
        super().__init__(
            model,
            name=name,
            mode=GraderMode.LISTWISE,
            description="Single-elimination tournament over a group of responses",
            template=template,
            criteria=criteria,
            language=language,
            sampling=sampling,
        )
        self.both_orders = both_orders
        self.scoring = check_scoring(self.name, scoring)

    async def _match(
        self,
        judge: PairwiseJudge,
        base: dict[str, object],
        texts: Sequence[str],
        pair: tuple[int, int],
        first_shown: int,
        out: list[tuple[Winner | GraderError, list[OrderVerdict | GraderError | None]]],
        index: int,
    ) -> None:
        """Judge one match; store (winner as "A" = ``pair[0]``, or the error) and its calls."""
        a, b = pair
        shown = (a, b) if first_shown == a else (b, a)
        orders = [shown, (shown[1], shown[0])] if self.both_orders else [shown]
        verdicts: list[OrderVerdict | GraderError | None] = [None] * len(orders)
        async with anyio.create_task_group() as tg:
            for k, (x, y) in enumerate(orders):
                tg.start_soon(
                    compare_into, judge, {**base, "response_a": texts[x], "response_b": texts[y]}, verdicts, k
                )
        failure = next((f for v in verdicts if (f := failure_of(v)) is not None), None)
        if failure is not None:
            out[index] = (failure, verdicts)
            return
        first = verdicts[0]
        assert isinstance(first, OrderVerdict)
        winner: Winner = first.winner
        if self.both_orders:
            second = verdicts[1]
            assert isinstance(second, OrderVerdict)
            winner = combine_orders(first.winner, second.winner).winner
        out[index] = (winner if shown[0] == a else swap(winner), verdicts)

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
        rounds = math.ceil(math.log2(n))
        survived = [0] * n
        errors: list[MemberError | None] = [None] * n
        matches: list[JsonValue] = []
        outcomes: list[PairOutcome] = []
        usage = TokenUsage()
        alive = list(range(n))
        started = time.monotonic()
        for round_no in range(1, rounds + 1):
            pairs = [(alive[k], alive[k + 1]) for k in range(0, len(alive) - 1, 2)]
            byes = alive[2 * len(pairs) :]
            # Alternate which response of a match is shown first.
            firsts = [a if (round_no + m) % 2 else b for m, (a, b) in enumerate(pairs)]
            results: list[tuple[Winner | GraderError, list[OrderVerdict | GraderError | None]]] = [
                ("tie", []) for _ in pairs
            ]
            async with anyio.create_task_group() as tg:
                for m, pair in enumerate(pairs):
                    tg.start_soon(self._match, judge, base, texts, pair, firsts[m], results, m)
            alive = []
            for (a, b), (winner, calls) in zip(pairs, results, strict=True):
                usage = usage + total_usage(calls)
                if isinstance(winner, GraderError):
                    errors[a] = MemberError.of(winner, f"round {round_no} vs response {b}: ")
                    errors[b] = MemberError.of(winner, f"round {round_no} vs response {a}: ")
                    matches.append([round_no, a, b, None])
                    continue
                victor = b if winner == "B" else a  # a tie sends the earlier response on
                outcomes.append(PairOutcome(a, b, None if winner == "tie" else victor))
                matches.append([round_no, a, b, victor])
                survived[victor] += 1
                alive.append(victor)
            for k in byes:
                survived[k] += 1
            alive += byes
            alive.sort()
        latency_s = time.monotonic() - started
        if self.scoring == "borda":
            scores: list[float | None] = [s / rounds for s in survived]
        else:
            scores = bradley_terry_scores(outcomes, n)
        scores = [None if errors[k] is not None else s for k, s in enumerate(scores)]
        n_calls = len(matches) * (2 if self.both_orders else 1)
        reason = (
            f"knockout over {rounds} rounds, {len(matches)} matches ({n_calls} calls); "
            f"{self.scoring} scores: " + format_scores(scores)
        )
        return finish_group(
            self.name,
            scores,
            errors,
            scoring=self.scoring,
            reason=reason,
            metadata={"rounds": rounds, "survived": list(survived), "matches": matches},
            usage=usage,
            latency_s=latency_s,
        )
