"""LLM comparison graders: pairwise preference, listwise ranking, group tournament.

* :class:`PairwisePreferenceGrader`: P(A better) in [0, 1], judged in both orders.
* :class:`ListwiseRankingGrader`: one call ranks 2..N responses (a ``GraderRank``).
* :class:`GroupTournamentGrader`: GRPO group rewards ``(wins - losses) / (N - 1)`` from a
  debiased all-pairs tournament, in ``metadata["rewards"]`` of a ``GraderRank``.
"""

from openjudge.graders.comparison.group_tournament import GroupTournamentGrader as GroupTournamentGrader
from openjudge.graders.comparison.listwise import ListwiseRankingGrader as ListwiseRankingGrader
from openjudge.graders.comparison.orders import OrderAgreement as OrderAgreement
from openjudge.graders.comparison.orders import combine_orders as combine_orders
from openjudge.graders.comparison.pairwise import PairwisePreferenceGrader as PairwisePreferenceGrader
from openjudge.graders.comparison.pairwise_judge import PairwiseJudge as PairwiseJudge
from openjudge.graders.comparison.tournament import PairOutcome as PairOutcome
from openjudge.graders.comparison.tournament import tournament_rewards as tournament_rewards
from openjudge.graders.comparison.verdicts import ListwiseVerdict as ListwiseVerdict
from openjudge.graders.comparison.verdicts import PairwiseVerdict as PairwiseVerdict
from openjudge.graders.comparison.verdicts import Winner as Winner

__all__ = [
    "GroupTournamentGrader",
    "ListwiseRankingGrader",
    "ListwiseVerdict",
    "OrderAgreement",
    "PairOutcome",
    "PairwiseJudge",
    "PairwisePreferenceGrader",
    "PairwiseVerdict",
    "Winner",
    "combine_orders",
    "tournament_rewards",
]
