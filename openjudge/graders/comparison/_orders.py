"""Position debiasing: combine the verdicts of one pair judged in both orders.

A pair (A, B) is judged once as shown (A first) and once swapped (B first). The
swapped verdict is mapped back ("A" there means B), then:

* ``p(w)`` is P(A better) for one verdict: 1.0 for A, 0.5 for a tie, 0.0 for B;
* if the two orders agree, the result is their common verdict and ``score = p``;
* if they disagree (a *flip*), the result is a tie and ``score = 0.5``;
* ``confidence = 1 - |p(forward) - p(backward)|``: 1.0 when the orders agree, 0.5 when
  one order found a winner and the other a tie, 0.0 when they named opposite winners.
"""

from __future__ import annotations

from dataclasses import dataclass

from openjudge.graders.comparison._verdicts import Winner

__all__ = ["FIRST_WINS", "OrderAgreement", "combine_orders", "swap"]

FIRST_WINS: dict[Winner, float] = {"A": 1.0, "tie": 0.5, "B": 0.0}
"""P(the response shown first is better) for each verdict: ``p(w)`` above."""

_SWAPPED: dict[Winner, Winner] = {"A": "B", "B": "A", "tie": "tie"}


def swap(winner: Winner) -> Winner:
    """The same verdict with the positions exchanged."""
    return _SWAPPED[winner]


@dataclass(frozen=True, slots=True)
class OrderAgreement:
    """Both orders of one pair, combined.

    Attributes:
        winner: ``"A"`` or ``"B"`` if both orders named it, else ``"tie"``.
        score: P(A better): 1.0, 0.0, or 0.5 for a tie or a flip.
        confidence: ``1 - |p(forward) - p(backward)|`` (see the module docstring).
        flip: Whether the two orders disagreed.
        forward: The verdict with A shown first.
        backward: The swapped order's verdict, mapped back to the pair's labels.
    """

    winner: Winner
    score: float
    confidence: float
    flip: bool
    forward: Winner
    backward: Winner


def combine_orders(forward: Winner, swapped: Winner) -> OrderAgreement:
    """Combine a pair's two verdicts.

    Args:
        forward: The judge's winner with A shown first.
        swapped: The judge's raw winner with B shown first (its "A" is our B).

    Example:
        >>> combine_orders("A", "B").score  # A won both orders
        1.0
        >>> combine_orders("A", "A").flip  # the judge always prefers the first position
        True
    """
    backward = swap(swapped)
    flip = forward != backward
    winner: Winner = "tie" if flip else forward
    return OrderAgreement(
        winner=winner,
        score=FIRST_WINS[winner],
        confidence=1.0 - abs(FIRST_WINS[forward] - FIRST_WINS[backward]),
        flip=flip,
        forward=forward,
        backward=backward,
    )
