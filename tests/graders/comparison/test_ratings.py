from __future__ import annotations

import math

import pytest

from openjudge.graders.comparison import PairOutcome, borda_from_ranks, borda_scores, bradley_terry_scores
from openjudge.graders.comparison._ratings import outcomes_from_ranks, scores_from_outcomes


def test_borda_from_ranks() -> None:
    assert borda_from_ranks([1, 2]) == [1.0, 0.0]
    assert borda_from_ranks([3, 1, 4, 2]) == [1 / 3, 1.0, 0.0, 2 / 3]
    with pytest.raises(ValueError, match="at least 2"):
        borda_from_ranks([1])


def test_borda_scores_count_ties_as_half_and_skip_unplayed() -> None:
    outcomes = [PairOutcome(0, 1, 0), PairOutcome(0, 2, None), PairOutcome(1, 2, 2)]
    assert borda_scores(outcomes, 4) == [0.75, 0.0, 0.75, None]  # response 3 played no match
    # From every pair of a full ranking, Borda scores equal the ranking's.
    assert borda_scores(outcomes_from_ranks([3, 1, 4, 2]), 4) == borda_from_ranks([3, 1, 4, 2])


def test_bradley_terry_two_players_closed_form() -> None:
    # One win of 0 over 1, prior 1: the fixed point is p0 = 2 p1 ... check it exactly.
    s0, s1 = bradley_terry_scores([PairOutcome(0, 1, 0)], 2)
    assert s0 is not None and s1 is not None
    p0, p1 = s0 / (1 - s0), s1 / (1 - s1)
    # MM fixed point: p_i = W_i / (n_ij / (p_i + p_j) + prior / (p_i + 1)), W_0 = 1.5, W_1 = 0.5.
    assert math.isclose(p0, 1.5 / (1 / (p0 + p1) + 1 / (p0 + 1)), rel_tol=1e-8)
    assert math.isclose(p1, 0.5 / (1 / (p0 + p1) + 1 / (p1 + 1)), rel_tol=1e-8)
    assert s0 > 0.5 > s1


def test_bradley_terry_weighs_whom_a_response_beat() -> None:
    # Knockout-like record: 0 beat 1, 2 beat 3, 0 beat 2. Both 1 and 3 lost once, but 3
    # lost to 2, who only lost to the champion; 1 lost to the champion directly.
    outcomes = [PairOutcome(0, 1, 0), PairOutcome(2, 3, 2), PairOutcome(0, 2, 0)]
    borda = borda_scores(outcomes, 4)
    bt = bradley_terry_scores(outcomes, 4)
    assert borda == [1.0, 0.0, 0.5, 0.0]
    assert bt[0] is not None and bt[1] is not None and bt[2] is not None and bt[3] is not None
    assert bt[0] > bt[2] > bt[1] and bt[0] > bt[2] > bt[3]
    assert all(0 < s < 1 for s in bt if s is not None)


def test_bradley_terry_stays_finite_for_a_perfect_record_and_is_symmetric() -> None:
    bt = bradley_terry_scores(outcomes_from_ranks([1, 2, 3, 4]), 4)
    assert all(s is not None and 0 < s < 1 for s in bt)
    assert bt == sorted(bt, key=lambda s: -(s or 0))
    ties = bradley_terry_scores([PairOutcome(0, 1, None), PairOutcome(1, 2, None)], 3)
    assert all(s is not None and math.isclose(s, 0.5) for s in ties)
    assert bradley_terry_scores([PairOutcome(0, 1, 0)], 3)[2] is None
    with pytest.raises(ValueError, match="prior must be > 0"):
        bradley_terry_scores([], 2, prior=0)


@pytest.mark.parametrize(
    ("outcomes", "message"),
    [
        ([PairOutcome(0, 0, 0)], "two distinct indices"),
        ([PairOutcome(0, 5, 0)], "two distinct indices"),
        ([PairOutcome(0, 1, 2)], "winner 2 is not in the pair"),
    ],
)
def test_invalid_outcomes_are_refused(outcomes: list[PairOutcome], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        borda_scores(outcomes, 3)
    with pytest.raises(ValueError, match=message):
        bradley_terry_scores(outcomes, 3)


def test_scores_from_outcomes_dispatches_and_refuses_unknown_scoring() -> None:
    outcomes = [PairOutcome(0, 1, 1)]
    assert scores_from_outcomes(outcomes, 2, "borda") == [0.0, 1.0]
    assert scores_from_outcomes(outcomes, 2, "bradley_terry") == bradley_terry_scores(outcomes, 2)
    with pytest.raises(ValueError, match="scoring must be one of"):
        scores_from_outcomes(outcomes, 2, "elo")  # type: ignore[arg-type]
