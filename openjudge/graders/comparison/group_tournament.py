"""GroupTournamentGrader: a debiased round-robin tournament rewarding each response of a group.

For a GRPO group of N responses to one query, every pair (i, j) is judged in both
orders, (i, j) and (j, i): N(N-1) judge calls, run concurrently (at most
``max_concurrency`` at once; the provider's own limits apply as well). A pair counts
as a win for i only if both orders prefer i; a tie, or orders that disagree, count as
neither. Then (see :mod:`~openjudge.graders.comparison.tournament`)::

    reward_i = (wins_i - losses_i) / (N - 1)        in [-1, 1]

The grader returns one :class:`GraderRank` per group (rank by reward, ties by
position) with the per-response rewards in ``metadata["rewards"]``; adapters that
need one number per response (such as the VERL reward manager) read that list.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence

import anyio

from openjudge.graders.base_grader import BaseGrader, grader_boundary
from openjudge.graders.comparison._calls import compare_into, first_failure, total_usage
from openjudge.graders.comparison._inputs import check_responses, check_text
from openjudge.graders.comparison.orders import combine_orders
from openjudge.graders.comparison.pairwise_judge import OrderVerdict, PairwiseJudges
from openjudge.graders.comparison.prompts import TemplateLike
from openjudge.graders.comparison.tournament import (
    PairOutcome,
    ranks_from_rewards,
    tournament_rewards,
    tournament_tally,
)
from openjudge.graders.schema import GraderError, GraderMode, GraderRank
from openjudge.models.chat_model import ChatModel, Sampling
from openjudge.models.schema.prompt_template import LanguageEnum

__all__ = ["GroupTournamentGrader"]


class GroupTournamentGrader(BaseGrader):
    """Reward each response of a group by a position-debiased all-pairs tournament.

    Metadata: ``rewards`` (one per response, in input order), ``wins``, ``losses``,
    ``flips`` (pairs whose two orders disagreed), ``flip_rate`` (flips / pairs) and
    ``matches`` (``[i, j, winner]`` per pair; ``winner`` is ``null`` for no decision).
    Any failed judge call makes the whole result a :class:`GraderError`, with the usage
    of every call: a partial tournament would bias the rewards. ``usage`` sums every
    call; ``latency_s`` is the wall time of the whole tournament.

    Args:
        model: The judge.
        template: A custom pairwise prompt with ``{response_a}``, ``{response_b}`` and
            optionally ``{query}`` and ``{reference}``; ``None`` for the built-in prompts.
        criteria: What "better" means, for the built-in prompts.
        language: Prompt language.
        sampling: Sampling overrides for the judge calls.
        max_concurrency: Judge calls of one group in flight at once.
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
        name: str = "",
    ) -> None:
        super().__init__(
            name=name,
            mode=GraderMode.LISTWISE,
            description="Debiased all-pairs tournament reward for a group of responses",
        )
        if max_concurrency < 1:
            raise ValueError(f"{self.name}: max_concurrency must be >= 1, got {max_concurrency}")
        self.model = model
        self.language = LanguageEnum(language)
        self.max_concurrency = max_concurrency
        self.judges = PairwiseJudges(
            model,
            name=self.name,
            template=template,
            criteria=criteria,
            language=self.language,
            sampling=sampling,
        )

    @grader_boundary
    async def aevaluate(
        self,
        *,
        query: str,
        responses: Sequence[str],
        reference: str | None = None,
    ) -> GraderRank | GraderError:
        judge = self.judges.pick(reference)
        base: dict[str, object] = {"query": check_text("query", query)}
        if reference is not None:
            base["reference"] = reference
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
        latency = time.monotonic() - started
        labels = [f"responses {first},{second}" for first, second in calls]
        failure = first_failure(self.name, labels, verdicts, latency_s=latency)
        if failure is not None:
            return failure
        outcomes: list[PairOutcome] = []
        flips = 0
        for p, (i, j) in enumerate(pairs):
            forward, swapped = verdicts[2 * p], verdicts[2 * p + 1]
            assert isinstance(forward, OrderVerdict) and isinstance(swapped, OrderVerdict)
            agreement = combine_orders(forward.winner, swapped.winner)
            flips += agreement.flip
            winner = {"A": i, "B": j}.get(agreement.winner)
            outcomes.append(PairOutcome(i, j, winner))
        wins, losses = tournament_tally(outcomes, n)
        rewards = tournament_rewards(outcomes, n)
        return GraderRank(
            name=self.name,
            rank=ranks_from_rewards(rewards),
            reason=(
                f"{len(pairs)} pairs judged in both orders, {flips} inconsistent; "
                f"rewards (wins - losses) / {n - 1}: {', '.join(f'{r:+.3f}' for r in rewards)}"
            ),
            metadata={
                "rewards": rewards,
                "wins": wins,
                "losses": losses,
                "flips": flips,
                "flip_rate": flips / len(pairs),
                "matches": [[o.i, o.j, o.winner] for o in outcomes],
            },
            usage=total_usage(verdicts),
            latency_s=latency,
        )
