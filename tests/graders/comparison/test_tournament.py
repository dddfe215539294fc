from __future__ import annotations

import pytest

from openjudge.graders.comparison import PairOutcome, tournament_rewards
from openjudge.graders.comparison._tournament import tournament_tally


def test_two_responses() -> None:
    assert tournament_rewards([PairOutcome(0, 1, 0)], 2) == [1.0, -1.0]
    assert tournament_rewards([PairOutcome(0, 1, 1)], 2) == [-1.0, 1.0]
    assert tournament_rewards([PairOutcome(0, 1, None)], 2) == [0.0, 0.0]


def test_total_order_of_four() -> None:
    # 3 beats everyone, then 1, then 2, then 0.
    beats = {(3, 1), (3, 2), (3, 0), (1, 2), (1, 0), (2, 0)}
    outcomes = [PairOutcome(i, j, i if (i, j) in beats else j) for i in range(4) for j in range(i + 1, 4)]
    assert tournament_rewards(outcomes, 4) == [-1.0, 1 / 3, -1 / 3, 1.0]
    assert tournament_tally(outcomes, 4) == ([0, 2, 1, 3], [3, 1, 2, 0])


def test_ties_count_neither_and_missing_pairs_count_as_ties() -> None:
    outcomes = [PairOutcome(0, 1, 0), PairOutcome(0, 2, None), PairOutcome(1, 2, 2)]
    assert tournament_rewards(outcomes, 3) == [0.5, -1.0, 0.5]
    assert tournament_rewards([PairOutcome(2, 0, 2)], 3) == [-0.5, 0.0, 0.5]
    assert tournament_rewards([], 3) == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("outcomes", "n", "message"),
    [
        ([], 1, "at least 2 responses"),
        ([PairOutcome(0, 2, 0)], 2, r"pair \(0, 2\) is not two distinct indices"),
        ([PairOutcome(1, 1, 1)], 2, "not two distinct indices"),
        ([PairOutcome(0, 1, 2)], 3, "winner 2 is not in the pair"),
        ([PairOutcome(0, 1, 0), PairOutcome(1, 0, None)], 2, r"pair \(0, 1\) appears twice"),
    ],
)
def test_invalid_outcomes_are_refused(outcomes: list[PairOutcome], n: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tournament_rewards(outcomes, n)
