"""Score modes beyond reading the verdict: logprob-weighted expectation and voting.

* **Expected score from logprobs.** The judge writes its verdict as usual; the token that
  carries the score comes back with its top alternatives. The score becomes
  ``sum(p(s) * s) / sum(p(s))`` over the alternatives that are valid integer scores in
  the declared range. It falls back to the written score (and says so in metadata)
  when the score token cannot be found or the valid alternatives carry less than
  ``min_mass`` of the probability.
* **Voting.** N sampled verdicts, taken in waves: the first wave is the smallest that
  could already form a majority, and sampling stops as soon as one score has more
  than half of N votes (or can no longer be caught up by the votes left).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from openjudge.models.chat_model import TokenLogprob
from openjudge.results import ScoreRange

__all__ = ["ExpectedScore", "expected_score", "vote_decided", "vote_winner"]

_SCORE_VALUE = re.compile(r'"score"\s*:\s*"?(-?\d+)')


@dataclass(frozen=True, slots=True)
class ExpectedScore:
    """A logprob-weighted score and where it came from."""

    value: float
    distribution: dict[int, float]
    """Normalised probability per valid score."""
    mass: float
    """Probability the judge put on valid scores at the score position (before normalising)."""


def _score_token_index(content: str, tokens: Sequence[TokenLogprob]) -> int | None:
    match = _SCORE_VALUE.search(content)
    if match is None:
        return None
    target = match.start(1) if not match.group(1).startswith("-") else match.start(1) + 1
    offset = 0
    for i, token in enumerate(tokens):
        end = offset + len(token.token)
        if offset <= target < end:
            return i
        offset = end
    return None


def expected_score(
    content: str, tokens: Sequence[TokenLogprob], score_range: ScoreRange, *, min_mass: float = 0.5
) -> ExpectedScore | None:
    """The expected integer score at the verdict's score token, or None if it cannot be read.

    Only single-token integer scores are weighed (the usual 1-5 or 0-9 scales); a multi-digit
    score token, a missing token or too little probability on valid scores gives None.
    """
    index = _score_token_index(content, tokens)
    if index is None:
        return None
    token = tokens[index]
    candidates = token.top or ((token.token, token.logprob),)
    probabilities: dict[int, float] = {}
    for text, logprob in candidates:
        stripped = text.strip()
        if not stripped.lstrip("-").isdigit() or not math.isfinite(logprob):
            continue
        value = int(stripped)
        if score_range.contains(float(value)):
            probabilities[value] = probabilities.get(value, 0.0) + math.exp(logprob)
    mass = sum(probabilities.values())
    if mass < min_mass or mass <= 0:
        return None
    distribution = {k: v / mass for k, v in sorted(probabilities.items())}
    return ExpectedScore(sum(k * p for k, p in distribution.items()), distribution, mass)


def vote_winner(votes: Sequence[float]) -> float:
    """The most common score; ties go to the median of the tied values (then the lower)."""
    counts = Counter(votes)
    top = max(counts.values())
    tied = sorted(v for v, c in counts.items() if c == top)
    return tied[(len(tied) - 1) // 2]


def vote_decided(votes: Sequence[float], total: int) -> bool:
    """Whether the leader can no longer be overtaken with ``total - len(votes)`` votes left."""
    if not votes:
        return False
    counts = Counter(votes).most_common()
    left = total - len(votes)
    leader = counts[0][1]
    runner_up = counts[1][1] if len(counts) > 1 else 0
    return leader > runner_up + left
