"""Score modes beyond reading the verdict: logprob-weighted expectation and voting.

* **Expected score from logprobs.** The judge writes its verdict as usual; each token comes
  back with its top alternatives. The score becomes ``sum(p(s) * s) / sum(p(s))`` over the
  alternatives, at the score's token, that write a valid integer score in the declared
  range. It falls back to the written score (and says so in metadata) when the score token
  cannot be found or the valid alternatives carry less than ``min_mass`` of the probability.
  See :func:`written_score` for where the score is and :func:`expected_score` for how
  alternatives are read.
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
from typing import Literal

from openjudge.graders._judge_output import key_value_offset, verdict_object
from openjudge.models.chat_model import TokenLogprob
from openjudge.results import ScoreRange

__all__ = ["ExpectedScore", "WrittenScore", "expected_score", "vote_decided", "vote_winner", "written_score"]

_INTEGER = re.compile(r"-?\d+")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_BARE = re.compile(r"\s*(-?\d+(?:\.\d+)?)\Z")
# A closing line such as "Score: 4", "**Final score:** 4/5" or "Rating = 3.": the verdict
# written as text. Only the reply's last line counts, as only the last JSON object does.
# Matched against the reply without its trailing whitespace, and no two runs of the
# pattern can take the same spaces, so a failing match costs linear time.
_TEXT = re.compile(
    r"(?im)^[ \t*#>_-]*(?:final[ \t]+)?(?:score|rating)[ \t*_]*[:=][ \t*_]*(-?\d+(?:\.\d+)?)"
    r"(?:[ \t]*/[ \t]*\d+)?[*_.]*\Z"
)


@dataclass(frozen=True, slots=True)
class ExpectedScore:
    """A logprob-weighted score and where it came from."""

    value: float
    distribution: dict[int, float]
    """Normalised probability per valid score."""
    mass: float
    """Probability the judge put on valid scores at the score position (before normalising)."""


@dataclass(frozen=True, slots=True)
class WrittenScore:
    """The score as the judge wrote it: where it starts in the reply, its value and its form."""

    offset: int
    value: float
    form: Literal["json", "number", "text"]
    """``json``: the verdict object's ``"score"``; ``number``: the whole reply; ``text``: a closing line."""


def written_score(content: str) -> WrittenScore | None:
    """Where the judge's score is in its reply, or ``None`` if the reply holds none.

    * JSON: the ``"score"`` value of the verdict object, which is the reply if it is one
      object, else the **last** top-level object in it (as the verdict is read): a score the
      judge quotes from the response before its verdict is never the one weighed. A score
      written as a string (``"4"``) starts after its quote.
    * A bare number: the whole reply is the score.
    * Text: a last line such as ``Score: 4`` or ``Rating = 3/5``.
    """
    try:
        _, start, _ = verdict_object(content)
    except ValueError:
        closing = content.rstrip()
        bare = _BARE.match(closing)
        if bare is not None:
            return WrittenScore(bare.start(1), float(bare.group(1)), "number")
        text = _TEXT.search(closing)
        return WrittenScore(text.start(1), float(text.group(1)), "text") if text is not None else None
    at = key_value_offset(content, start, "score")
    if at is None:
        return None
    at = at + 1 if content.startswith('"', at) else at
    number = _NUMBER.match(content, at)
    if number is None:
        return None
    return WrittenScore(at, float(number.group()), "json")


def _token_at(tokens: Sequence[TokenLogprob], target: int) -> tuple[int, int] | None:
    """The index of the token holding character ``target`` of the reply, and where that token starts."""
    offset = 0
    for i, token in enumerate(tokens):
        end = offset + len(token.token)
        if offset <= target < end:
            return i, offset
        offset = end
    return None


def expected_score(
    content: str, tokens: Sequence[TokenLogprob], score_range: ScoreRange, *, min_mass: float = 0.5
) -> ExpectedScore | None:
    """The expected integer score at the score's token, or ``None`` if it cannot be read.

    The score's token may carry text around the number (``": 4"``, ``" 4"``, ``"4}"``, as
    tokenizers merge numbers with their neighbours): an alternative counts when it starts
    with the same text before the number, and its number is the integer it then spells
    (``" 5"`` is 5 where the judge wrote ``" 4"``; ``" ``" is not a score). The written
    number's integer part must end inside its token (a score split over tokens, such as
    ``1`` + ``0``, is not weighed), and valid alternatives must carry ``min_mass``.
    ``tokens`` must spell ``content`` (each token's text in order).
    """
    written = written_score(content)
    if written is None:
        return None
    target = written.offset
    found = _token_at(tokens, target)
    if found is None:
        return None
    index, token_start = found
    token = tokens[index]
    prefix = token.token[: target - token_start]
    integer = _INTEGER.match(content, target)
    in_token = _INTEGER.match(token.token, len(prefix))
    if integer is None or in_token is None or in_token.group() != integer.group():
        return None
    candidates = token.top or ((token.token, token.logprob),)
    probabilities: dict[int, float] = {}
    for text, logprob in candidates:
        number = _INTEGER.match(text, len(prefix)) if text.startswith(prefix) else None
        if number is None or not math.isfinite(logprob):
            continue
        value = int(number.group())
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
