"""LLM comparison graders: pairwise preference, and group graders for GRPO groups.

* :class:`PairwisePreferenceGrader`: P(A better) in [0, 1], judged in both orders.
* Group graders judge the N responses to one query together and give each a score in
  [0, 1] (``metadata["scores"]``; :func:`member_results` splits them per response):

  - :class:`ListwiseRankingGrader`: one call ranks the group;
  - :class:`GroupTournamentGrader`: all pairs in both orders, N(N-1) calls;
  - :class:`KnockoutTournamentGrader`: a single-elimination bracket, N - 1 calls;
  - :class:`AnchorComparisonGrader`: each response against an anchor, N calls.

  Rankings and matches become scores by Borda count or Bradley–Terry
  (:mod:`~openjudge.graders.comparison._ratings`).
"""

from openjudge.graders.comparison._anchor import AnchorComparisonGrader as AnchorComparisonGrader
from openjudge.graders.comparison._group import member_results as member_results
from openjudge.graders.comparison._group_tournament import GroupTournamentGrader as GroupTournamentGrader
from openjudge.graders.comparison._knockout import KnockoutTournamentGrader as KnockoutTournamentGrader
from openjudge.graders.comparison._listwise import ListwiseRankingGrader as ListwiseRankingGrader
from openjudge.graders.comparison._orders import OrderAgreement as OrderAgreement
from openjudge.graders.comparison._orders import combine_orders as combine_orders
from openjudge.graders.comparison._pairwise import PairwisePreferenceGrader as PairwisePreferenceGrader
from openjudge.graders.comparison._pairwise_judge import PairwiseJudge as PairwiseJudge
from openjudge.graders.comparison._ratings import GroupScoring as GroupScoring
from openjudge.graders.comparison._ratings import borda_from_ranks as borda_from_ranks
from openjudge.graders.comparison._ratings import borda_scores as borda_scores
from openjudge.graders.comparison._ratings import bradley_terry_scores as bradley_terry_scores
from openjudge.graders.comparison._tournament import PairOutcome as PairOutcome
from openjudge.graders.comparison._tournament import tournament_rewards as tournament_rewards
from openjudge.graders.comparison._verdicts import ListwiseVerdict as ListwiseVerdict
from openjudge.graders.comparison._verdicts import PairwiseVerdict as PairwiseVerdict
from openjudge.graders.comparison._verdicts import Winner as Winner
from openjudge.graders.comparison.prompts import listwise_template as listwise_template
from openjudge.graders.comparison.prompts import pairwise_template as pairwise_template

__all__ = [
    "AnchorComparisonGrader",
    "GroupScoring",
    "GroupTournamentGrader",
    "KnockoutTournamentGrader",
    "ListwiseRankingGrader",
    "ListwiseVerdict",
    "OrderAgreement",
    "PairOutcome",
    "PairwiseJudge",
    "PairwisePreferenceGrader",
    "PairwiseVerdict",
    "Winner",
    "borda_from_ranks",
    "borda_scores",
    "bradley_terry_scores",
    "combine_orders",
    "listwise_template",
    "member_results",
    "pairwise_template",
    "tournament_rewards",
]
