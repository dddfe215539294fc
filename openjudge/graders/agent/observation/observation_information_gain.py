"""Reward observations that bring new information; penalise ones that repeat earlier ones.

Reproduces OpenJudge 0.2.4's ``ObservationInformationGainGrader``
(``graders/agent/observation/observation_information_gain.py`` in its package).
For each observation in order (those under 10 characters after stripping are skipped:
neither rewarded nor remembered)::

    max_sim = max(jaccard(obs, prev) for prev in earlier kept observations)   # 0.0 if none
    reward  = (1 − max_sim) · exp(−2 · max(0, max_sim − similarity_threshold))
    score   = clamp(mean(rewards), 0, 1)                                      # 0.0 if none

``jaccard`` is the whitespace-token Jaccard of :mod:`openjudge.graders.agent._trajectory_parsing`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

from pydantic import JsonValue

from openjudge.graders.agent._checks import finite_number
from openjudge.graders.agent._results import UNIT_RANGE, unit_score
from openjudge.graders.agent._trajectory_parsing import Message, extract_action_observation_pairs
from openjudge.graders.base_grader import BaseGrader, grader_boundary
from openjudge.results import GraderError, GraderScore

__all__ = ["MIN_OBSERVATION_CHARS", "ObservationInformationGainGrader"]

MIN_OBSERVATION_CHARS = 10
"""Observations shorter than this after ``strip()`` are skipped (OpenJudge's rule)."""

_NO_PAIRS_REASON = "No action-observation pairs found - unable to evaluate information gain"
_exp = math.exp


class ObservationInformationGainGrader(BaseGrader):
    """Score how much new information each tool observation adds, in [0, 1].

    With no (action, observation) pair at all the score is 0.0 and metadata says
    ``"evaluable": False`` (as in OpenJudge). Observations given as content parts are read
    as their text (OpenJudge raises ``AttributeError``).

    Metadata: OpenJudge's ``raw_average``, ``observation_count`` (all pairs, skipped ones
    included), ``each_turn_rewards``, ``each_turn_similarity`` (max similarity per rewarded
    step), ``similarity_threshold``; plus ``evaluable`` (False when no observation was
    rewarded), ``unanswered_call_count`` and ``orphan_observation_count``.

    Cost: O(m²) token-set comparisons for m kept observations; an observation whose token
    set was already seen is recognised in O(1) (its similarity is 1.0).

    Args:
        similarity_threshold: Similarity above which the reward also decays exponentially.
        name: Result name.
    """

    default_name = "observation_information_gain"
    default_score_range = UNIT_RANGE

    def __init__(self, similarity_threshold: float = 0.5, *, name: str = "") -> None:
        super().__init__(name=name, description="Evaluate information gain and redundancy in observations")
        self.similarity_threshold = finite_number("similarity_threshold", similarity_threshold)

    @grader_boundary
    async def aevaluate(self, *, messages: Sequence[Message]) -> GraderScore | GraderError:
        """Grade one trajectory.

        Args:
            messages: OpenAI-format messages (dicts or ChatMessage), optionally wrapped as
                ``{"message": {...}}``.
        """
        trajectory = extract_action_observation_pairs(messages)
        observations = trajectory.observations
        if not observations:
            return unit_score(
                self.name,
                0.0,
                _NO_PAIRS_REASON,
                {
                    "action_count": 0,
                    "reason": _NO_PAIRS_REASON,
                    "evaluable": False,
                    "unanswered_call_count": trajectory.unanswered_call_count,
                    "orphan_observation_count": trajectory.orphan_observation_count,
                },
            )
        threshold = self.similarity_threshold
        rewards: list[float] = []
        similarities: list[float] = []
        seen: set[frozenset[str]] = set()
        previous: list[frozenset[str]] = []  # distinct token sets only: repeats cannot raise a max
        for observation in observations:
            if len(observation.strip()) < MIN_OBSERVATION_CHARS:
                continue
            tokens = frozenset(observation.lower().split())  # non-empty: ≥ 10 non-space chars
            if tokens in seen:
                max_similarity = 1.0
            else:
                max_similarity = 0.0
                size = len(tokens)
                for other in previous:
                    common = len(tokens & other)
                    similarity = common / (size + len(other) - common)
                    if similarity > max_similarity:
                        max_similarity = similarity
                seen.add(tokens)
                previous.append(tokens)
            similarities.append(max_similarity)
            excess = max_similarity - threshold
            rewards.append((1.0 - max_similarity) * _exp(-2 * excess) if excess > 0 else 1.0 - max_similarity)
        average = sum(rewards) / len(rewards) if rewards else 0.0
        return unit_score(
            self.name,
            max(0.0, min(1.0, average)),
            f"Average info gain score across {len(rewards)} observation steps: {average:.3f}",
            {
                "raw_average": average,
                "observation_count": len(observations),
                "each_turn_rewards": cast("list[JsonValue]", rewards),
                "each_turn_similarity": cast("list[JsonValue]", similarities),
                "similarity_threshold": threshold,
                "evaluable": bool(rewards),
                "unanswered_call_count": trajectory.unanswered_call_count,
                "orphan_observation_count": trajectory.orphan_observation_count,
            },
        )
