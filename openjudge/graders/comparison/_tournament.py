"""Round-robin tournament rewards for a group of responses (GRPO-style).

Every pair of the ``n`` responses meets once. A pair's outcome is a winner or no
decision (a tie, or a position-inconsistent verdict when both orders were judged).
For response ``i``::

    reward_i = (wins_i - losses_i) / (n - 1)        in [-1, 1]

so a response that beats every other gets 1, one that loses to every other gets -1,
and ties count as neither a win nor a loss.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["PairOutcome", "tournament_rewards", "tournament_tally"]


@dataclass(frozen=True, slots=True)
class PairOutcome:
    """The result of one pair's match.

    Attributes:
        i: Index of one response.
        j: Index of the other response.
        winner: ``i`` or ``j``, or ``None`` for a tie or an order-inconsistent verdict.
    """

    i: int
    j: int
    winner: int | None


def tournament_tally(outcomes: Iterable[PairOutcome], n: int) -> tuple[list[int], list[int]]:
    """Wins and losses per response.

    Raises:
        ValueError: ``n < 2``, an index out of range, a pair of a response with itself,
            a winner outside its pair, or a pair that appears twice.
    """
    if n < 2:
        raise ValueError(f"a tournament needs at least 2 responses, got n={n}")
    wins, losses = [0] * n, [0] * n
    seen: set[tuple[int, int]] = set()
    for o in outcomes:
        if not (0 <= o.i < n and 0 <= o.j < n) or o.i == o.j:
            raise ValueError(f"pair ({o.i}, {o.j}) is not two distinct indices in 0..{n - 1}")
        if o.winner is not None and o.winner not in (o.i, o.j):
            raise ValueError(f"pair ({o.i}, {o.j}): winner {o.winner} is not in the pair")
        key = (min(o.i, o.j), max(o.i, o.j))
        if key in seen:
            raise ValueError(f"pair {key} appears twice; each pair meets once")
        seen.add(key)
        if o.winner is not None:
            loser = o.j if o.winner == o.i else o.i
            wins[o.winner] += 1
            losses[loser] += 1
    return wins, losses


def tournament_rewards(outcomes: Iterable[PairOutcome], n: int) -> list[float]:
    """``(wins_i - losses_i) / (n - 1)`` for each of the ``n`` responses.

    Pairs missing from ``outcomes`` count like ties.

    Example:
        >>> tournament_rewards([PairOutcome(0, 1, 0), PairOutcome(0, 2, None), PairOutcome(1, 2, 2)], 3)
        [0.5, -1.0, 0.5]
    """
    wins, losses = tournament_tally(outcomes, n)
    return [(w - lo) / (n - 1) for w, lo in zip(wins, losses, strict=True)]
