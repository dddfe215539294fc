"""Per-response scores from a group's comparisons: Borda counts and Bradley–Terry strengths.

Both give every response a score in [0, 1] (1 best) from the comparisons it took part in,
so they combine with pointwise scores through the usual aggregators:

* **Borda** (``"borda"``): the share of its comparisons a response won, a tie counting
  half. From a full ranking of ``n`` responses this is ``(n - rank) / (n - 1)``; from
  all pairs it is ``(wins + ties / 2) / (n - 1)``. Simple, bounded, and exactly what a
  ranking says, but blind to *whom* a response beat.
* **Bradley–Terry** (``"bradley_terry"``): each response ``i`` gets a strength ``p_i``
  with ``P(i beats j) = p_i / (p_i + p_j)``, fitted by maximum likelihood (Hunter's MM
  iteration, ties as half a win each). A prior of ``prior`` games against a reference
  player of strength 1, half of them won, keeps the fit finite when a response wins (or
  loses) everything. The score is ``p_i / (p_i + 1)``: the chance of beating that
  reference player. It weighs wins by the strength of the loser, which matters when the
  comparisons are incomplete (a knockout) or noisy.

A response that took part in no comparison has no score (``None``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, TypeAlias

from openjudge.graders.comparison._tournament import PairOutcome

__all__ = [
    "GroupScoring",
    "borda_from_ranks",
    "borda_scores",
    "bradley_terry_scores",
    "outcomes_from_ranks",
    "scores_from_outcomes",
]

GroupScoring: TypeAlias = Literal["borda", "bradley_terry"]
"""How a group grader turns comparisons into per-response scores."""

SCORINGS: tuple[GroupScoring, ...] = ("borda", "bradley_terry")


def borda_from_ranks(rank: Sequence[int]) -> list[float]:
    """``(n - rank_i) / (n - 1)``: 1 for the best of ``n``, 0 for the worst.

    Example:
        >>> borda_from_ranks([2, 1, 3])
        [0.5, 1.0, 0.0]
    """
    n = len(rank)
    if n < 2:
        raise ValueError(f"a ranking needs at least 2 responses, got {n}")
    return [(n - r) / (n - 1) for r in rank]


def outcomes_from_ranks(rank: Sequence[int]) -> list[PairOutcome]:
    """Every pair of a full ranking as a match won by the better-ranked response."""
    n = len(rank)
    return [PairOutcome(i, j, i if rank[i] < rank[j] else j) for i in range(n) for j in range(i + 1, n)]


def _tally(outcomes: Iterable[PairOutcome], n: int) -> tuple[list[float], list[list[int]]]:
    """Wins (ties count half) per response and games per pair."""
    wins = [0.0] * n
    games = [[0] * n for _ in range(n)]
    for o in outcomes:
        if not (0 <= o.i < n and 0 <= o.j < n) or o.i == o.j:
            raise ValueError(f"pair ({o.i}, {o.j}) is not two distinct indices in 0..{n - 1}")
        if o.winner is not None and o.winner not in (o.i, o.j):
            raise ValueError(f"pair ({o.i}, {o.j}): winner {o.winner} is not in the pair")
        games[o.i][o.j] += 1
        games[o.j][o.i] += 1
        if o.winner is None:
            wins[o.i] += 0.5
            wins[o.j] += 0.5
        else:
            wins[o.winner] += 1.0
    return wins, games


def borda_scores(outcomes: Iterable[PairOutcome], n: int) -> list[float | None]:
    """The share of its matches each response won (a tie is half a win).

    Example:
        >>> borda_scores([PairOutcome(0, 1, 0), PairOutcome(0, 2, None), PairOutcome(1, 2, 2)], 3)
        [0.75, 0.0, 0.75]
    """
    wins, games = _tally(outcomes, n)
    played = [sum(row) for row in games]
    return [w / g if g else None for w, g in zip(wins, played, strict=True)]


def bradley_terry_scores(
    outcomes: Iterable[PairOutcome],
    n: int,
    *,
    prior: float = 1.0,
    max_iterations: int = 500,
    tolerance: float = 1e-10,
) -> list[float | None]:
    """Bradley–Terry scores ``p_i / (p_i + 1)`` (see the module docstring).

    Args:
        outcomes: The matches (a pair may appear more than once).
        n: Number of responses.
        prior: Games each response plays against the strength-1 reference, half won.
        max_iterations: Cap on MM iterations.
        tolerance: Stop when no log-strength moves more than this.

    Example:
        >>> [round(s, 3) for s in bradley_terry_scores([PairOutcome(0, 1, 0)], 2)]
        [0.681, 0.319]
    """
    if prior <= 0:
        raise ValueError(f"prior must be > 0, got {prior}")
    wins, games = _tally(outcomes, n)
    played = [sum(row) for row in games]
    strength = [1.0] * n
    for _ in range(max_iterations):
        moved = 0.0
        for i in range(n):
            # Hunter (2004): p_i = W_i / sum_j n_ij / (p_i + p_j), the reference player included.
            denominator = prior / (strength[i] + 1.0)
            denominator += sum(games[i][j] / (strength[i] + strength[j]) for j in range(n) if games[i][j])
            updated = (wins[i] + prior / 2) / denominator
            moved = max(moved, abs(updated - strength[i]) / strength[i])
            strength[i] = updated
        if moved < tolerance:
            break
    return [p / (p + 1.0) if g else None for p, g in zip(strength, played, strict=True)]


def scores_from_outcomes(
    outcomes: Sequence[PairOutcome], n: int, scoring: GroupScoring
) -> list[float | None]:
    """Per-response scores in [0, 1] by ``scoring``.

    Raises:
        ValueError: An unknown ``scoring`` or an invalid outcome.
    """
    if scoring == "borda":
        return borda_scores(outcomes, n)
    if scoring == "bradley_terry":
        return bradley_terry_scores(outcomes, n)
    raise ValueError(f"scoring must be one of {', '.join(SCORINGS)}, got {scoring!r}")


def check_scoring(owner: str, scoring: str) -> GroupScoring:
    """``scoring`` if it is known, else a ValueError naming the choices."""
    for known in SCORINGS:
        if scoring == known:
            return known
    raise ValueError(f"{owner}: scoring must be one of {', '.join(SCORINGS)}, got {scoring!r}")
