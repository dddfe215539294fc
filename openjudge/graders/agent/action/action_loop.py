"""Detect an agent repeating itself: the share of action pairs whose signatures are alike.

Reproduces OpenJudge 0.2.4's ``ActionLoopDetectionGrader`` (``graders/agent/action/action_loop.py``):
the score is ``1 − similar_pairs / (n·(n−1)/2)`` over the ``n`` answered tool calls, where
a pair is similar when the whitespace-token Jaccard of the two signatures reaches
``similarity_threshold``. Fewer than two actions score 1.0.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import cast

from pydantic import JsonValue

from openjudge.graders.agent._checks import finite_number
from openjudge.graders.agent._results import UNIT_RANGE, unit_score
from openjudge.graders.agent._trajectory_parsing import (
    Message,
    action_signature,
    extract_action_observation_pairs,
)
from openjudge.graders.base_grader import BaseGrader, grader_boundary
from openjudge.graders.blame import shown
from openjudge.graders.text._tokens import counted
from openjudge.results import GraderError, GraderScore

__all__ = ["MAX_LISTED_PAIRS", "ActionLoopDetectionGrader"]

MAX_LISTED_PAIRS = 1000
"""At most this many similar pairs are listed in metadata; the counts stay exact.

A looping trajectory of n identical actions has n·(n−1)/2 similar pairs (about 2 million
for 2,000 actions), which would make the result larger than the trajectory.
"""

# Below this many actions the plain double loop is fastest; above it, identical
# signatures are grouped so that a long loop of the same call costs O(n), not O(n²).
_GROUPING_FROM = 48

_Pair = tuple[int, int, float]


def _similar_pairs_direct(
    sets: list[frozenset[str]], threshold: float, limit: int
) -> tuple[int, list[_Pair]]:
    count = 0
    listed: list[_Pair] = []
    n = len(sets)
    if threshold >= 1.0:
        # Only equal non-empty sets reach 1.0 (distinct ones stay below it, even in floats),
        # and nothing exceeds 1.0: an equality test replaces the Jaccard arithmetic.
        if threshold > 1.0:
            return 0, listed
        for i in range(n - 1):
            a = sets[i]
            if a:
                for j in range(i + 1, n):
                    if a == sets[j]:
                        count += 1
                        if len(listed) < limit:
                            listed.append((i, j, 1.0))
        return count, listed
    for i in range(n - 1):
        a = sets[i]
        len_a = len(a)
        for j in range(i + 1, n):
            b = sets[j]
            if a and b:
                common = len(a & b)
                similarity = common / (len_a + len(b) - common)
            else:
                similarity = 0.0
            if similarity >= threshold:
                count += 1
                if len(listed) < limit:
                    listed.append((i, j, similarity))
    return count, listed


def _similar_pairs_grouped(
    sets: list[frozenset[str]], threshold: float, limit: int
) -> tuple[int, list[_Pair]]:
    """Same result as :func:`_similar_pairs_direct`, comparing distinct token sets only.

    Counting compares each pair of distinct sets once. Listing then walks rows ``i`` in
    order and stops after ``min(count, limit)`` pairs, so memory stays O(n + limit).
    """
    members: dict[frozenset[str], list[int]] = {}
    for i, tokens in enumerate(sets):
        members.setdefault(tokens, []).append(i)
    keys = list(members)
    groups = [members[key] for key in keys]
    group_of = [0] * len(sets)
    for g, indices in enumerate(groups):
        for i in indices:
            group_of[i] = g
    # Two copies of one non-empty set have similarity 1.0; of the empty set, 0.0.
    self_similarity = [1.0 if key else 0.0 for key in keys]
    count = sum(
        len(indices) * (len(indices) - 1) // 2
        for g, indices in enumerate(groups)
        if self_similarity[g] >= threshold
    )
    # Distinct sets have similarity < 1.0 (exactly, even in floats), so they can only
    # pair up below 1.0.
    distinct_can_pair = threshold < 1.0
    if distinct_can_pair:
        for g in range(len(keys) - 1):
            a = keys[g]
            for h in range(g + 1, len(keys)):
                b = keys[h]
                if a and b:
                    common = len(a & b)
                    if common / (len(a) + len(b) - common) >= threshold:
                        count += len(groups[g]) * len(groups[h])
                elif threshold <= 0.0:
                    count += len(groups[g]) * len(groups[h])
    listed: list[_Pair] = []
    wanted = min(count, limit)
    for i in range(len(sets)):
        if len(listed) >= wanted:
            break
        g = group_of[i]
        a = keys[g]
        later: list[tuple[int, float]] = []
        for h in range(len(keys)) if distinct_can_pair else (g,):
            if h == g:
                similarity = self_similarity[g]
            else:
                b = keys[h]
                if a and b:
                    common = len(a & b)
                    similarity = common / (len(a) + len(b) - common)
                else:
                    similarity = 0.0
            if similarity >= threshold:
                group = groups[h]
                later.extend((j, similarity) for j in group[bisect_right(group, i) :])
        later.sort()
        listed.extend((i, j, similarity) for j, similarity in later[: wanted - len(listed)])
    return count, listed


def _similar_pairs(sets: list[frozenset[str]], threshold: float, limit: int) -> tuple[int, list[_Pair]]:
    """Count pairs ``i < j`` with ``jaccard(sets[i], sets[j]) >= threshold``; list the first ``limit``.

    Pairs are listed in ``(i, j)`` order, as OpenJudge's double loop finds them.
    Cost: O(n²) set intersections in general. From :data:`_GROUPING_FROM` sets on, equal sets
    are grouped: O(n) at threshold ≥ 1.0; otherwise O(k²) to count with k distinct sets, plus
    O(k) per row walked to list the first ``limit`` pairs.
    """
    if len(sets) < _GROUPING_FROM:
        return _similar_pairs_direct(sets, threshold, limit)
    return _similar_pairs_grouped(sets, threshold, limit)


class ActionLoopDetectionGrader(BaseGrader):
    """Score 1.0 when no two actions are alike, down to 0.0 when all of them are.

    An action is an answered tool call; its signature is ``"name: k1: v1, k2: v2"`` (keys
    sorted, values as Python ``str``), as in OpenJudge. Arguments given as a dict get the
    signature the same JSON text would get (OpenJudge raises ``TypeError`` there).

    Metadata (OpenJudge's keys, JSON lists instead of tuples, plus counts of malformed steps):
    ``action_count``, ``similar_pair_count``, ``total_pair_count``, ``similar_pairs``
    (``[signature_i, signature_j, similarity]``, at most :data:`MAX_LISTED_PAIRS`),
    ``similar_pair_indices`` (``[i, j]`` for the same pairs), ``similar_pairs_truncated``,
    ``similarity_threshold``, ``signatures``, ``unanswered_call_count`` (calls without an
    observation, not scored, as in OpenJudge) and ``orphan_observation_count`` (tool
    messages matching no call, skipped).

    Cost: O(n²) signature comparisons for n actions. From 48 actions on, identical
    signatures are grouped: at the default threshold 1.0 (only identical token sets are
    similar) the cost is O(n), so 10,000 steps take tens of milliseconds; below 1.0 it is
    O(k²) for k distinct signatures, about a second for 2,000 distinct ones.

    Args:
        similarity_threshold: A pair is similar when its signature Jaccard is at least this.
            1.0 (the default) counts only pairs with the same token set.
        name: Result name.
    """

    default_name = "action_loop_detection"
    default_score_range = UNIT_RANGE

    def __init__(self, similarity_threshold: float = 1.0, *, name: str = "") -> None:
        super().__init__(name=name, description="Detect and penalize repetitive actions in sequences")
        self.similarity_threshold = finite_number("similarity_threshold", similarity_threshold)

    @grader_boundary
    async def aevaluate(self, *, messages: Sequence[Message]) -> GraderScore | GraderError:
        """Grade one trajectory.

        Args:
            messages: OpenAI-format messages (dicts or ChatMessage), optionally wrapped as
                ``{"message": {...}}``.
        """
        trajectory = extract_action_observation_pairs(messages)
        signatures = [action_signature(action) for action in trajectory.actions]
        n = len(signatures)
        threshold = self.similarity_threshold
        if n < 2:
            similar = total = 0
            listed: list[_Pair] = []
            score = 1.0
        else:
            # Counted as a reader sees them: invisible marks or look-alikes must not hide a loop.
            sets = [frozenset(counted(signature).split()) for signature in signatures]
            similar, listed = _similar_pairs(sets, threshold, MAX_LISTED_PAIRS)
            total = n * (n - 1) // 2
            score = 1.0 - similar / total
        metadata: dict[str, JsonValue] = {
            "action_count": n,
            "similar_pair_count": similar,
            "total_pair_count": total,
            "similar_pairs": [[shown(signatures[i]), shown(signatures[j]), s] for i, j, s in listed],
            "similar_pair_indices": [[i, j] for i, j, _ in listed],
            "similar_pairs_truncated": len(listed) < similar,
            "similarity_threshold": threshold,
            "signatures": cast("list[JsonValue]", [shown(s) for s in signatures]),
            "unanswered_call_count": trajectory.unanswered_call_count,
            "orphan_observation_count": trajectory.orphan_observation_count,
        }
        return unit_score(
            self.name,
            score,
            f"Loop detection: {similar}/{total} pairs are similar (threshold={threshold})",
            metadata,
        )
