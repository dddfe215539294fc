"""Step efficiency of an agent trajectory: penalise steps that redo earlier work.

A step is an answered tool call (an action and its observation, paired as in
:mod:`openjudge.graders.agent._trajectory_parsing`). With ``t = redundancy_threshold``,
step ``i`` is *redundant* when some earlier step ``j`` made a similar call and got a
similar answer::

    alike(x, y)  = tokens(x) == tokens(y)  or  jaccard(x, y) >= t
    redundant(i) = ∃ j < i : alike(signature_i, signature_j) and alike(observation_i, observation_j)

(signatures as in ``ActionLoopDetectionGrader``; equal token sets count as alike even when
empty, so two identical calls that both return nothing are redundant). A repeated call
that returns new information (polling, retry after an error) is not redundant. Then::

    efficiency_ratio = (n − redundant) / n
    score = efficiency_ratio                                             without a reference
    score = 0.6 · efficiency_ratio + 0.4 · min(1, reference_step_count / n)   with one

With no step at all the score is 0.0 and metadata says ``"evaluable": False``.
The weights and the empty case are OpenJudge's; OpenJudge's redundancy test differs (exact
signature match anywhere earlier, similar observation anywhere earlier).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import JsonValue

from openjudge.graders.agent._checks import finite_number
from openjudge.graders.agent._results import UNIT_RANGE, unit_score
from openjudge.graders.agent._trajectory_parsing import (
    Message,
    action_signature,
    extract_action_observation_pairs,
    jaccard,
)
from openjudge.graders.base_grader import BaseGrader, InvalidInputError, grader_boundary
from openjudge.graders.blame import shown
from openjudge.graders.text._tokens import counted
from openjudge.results import GraderError, GraderScore

__all__ = ["MAX_LISTED_STEPS", "TrajectoryStepEfficiencyGrader"]

MAX_LISTED_STEPS = 1000
"""At most this many redundant steps are detailed in metadata; the count stays exact."""

_NO_STEPS_REASON = "No action-observation pairs found - unable to evaluate step efficiency"


def _step_count(value: object, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{where}: expected a positive integer number of steps, got {value!r}")
    return value


def _alike(a: frozenset[str], b: frozenset[str], threshold: float) -> bool:
    return a == b or jaccard(a, b) >= threshold


class TrajectoryStepEfficiencyGrader(BaseGrader):
    """Score how few steps of a trajectory were wasted, in [0, 1] (formula in the module docstring).

    Metadata: ``total_steps``, ``productive_steps``, ``redundant_steps``, ``efficiency_ratio``,
    ``reference_step_count``, ``reference_efficiency`` (None without a reference),
    ``redundant_details`` (``{"step", "same_as", "signature"}``, at most
    :data:`MAX_LISTED_STEPS`), ``redundancy_threshold``, ``evaluable``,
    ``unanswered_call_count`` and ``orphan_observation_count``.

    Cost: O(n · k) comparisons for n steps of which k are distinct (signature, observation)
    token-set pairs; an exact repeat is found in O(1).

    Args:
        redundancy_threshold: Jaccard similarity at which two signatures (and two
            observations) count as alike.
        reference_step_count: Expected number of steps, if known; a call may override it.
        name: Result name.
    """

    default_name = "trajectory_step_efficiency"
    default_score_range = UNIT_RANGE

    def __init__(
        self,
        redundancy_threshold: float = 0.8,
        reference_step_count: int | None = None,
        *,
        name: str = "",
    ) -> None:
        super().__init__(name=name, description="Evaluate the step efficiency of agent trajectories")
        self.redundancy_threshold = finite_number("redundancy_threshold", redundancy_threshold)
        try:
            self.reference_step_count = _step_count(reference_step_count, "reference_step_count")
        except InvalidInputError as exc:
            raise ValueError(str(exc)) from None

    @grader_boundary
    async def aevaluate(
        self, *, messages: Sequence[Message], reference_step_count: int | None = None
    ) -> GraderScore | GraderError:
        """Grade one trajectory.

        Args:
            messages: OpenAI-format messages (dicts or ChatMessage).
            reference_step_count: Expected number of steps; defaults to the constructor's.
        """
        reference = _step_count(reference_step_count, "reference_step_count")
        if reference is None:
            reference = self.reference_step_count
        trajectory = extract_action_observation_pairs(messages)
        counts: dict[str, JsonValue] = {
            "unanswered_call_count": trajectory.unanswered_call_count,
            "orphan_observation_count": trajectory.orphan_observation_count,
        }
        n = len(trajectory.actions)
        if n == 0:
            return unit_score(
                self.name,
                0.0,
                _NO_STEPS_REASON,
                {
                    "action_count": 0,
                    "productive_steps": 0,
                    "redundant_steps": 0,
                    "evaluable": False,
                    **counts,
                },
            )
        threshold = self.redundancy_threshold
        signatures = [action_signature(action) for action in trajectory.actions]
        first_seen: dict[tuple[frozenset[str], frozenset[str]], int] = {}
        distinct: list[tuple[int, frozenset[str], frozenset[str]]] = []
        redundant = 0
        details: list[JsonValue] = []
        for i, (signature, observation) in enumerate(zip(signatures, trajectory.observations, strict=True)):
            action_tokens = frozenset(counted(signature).split())
            observation_tokens = frozenset(observation.lower().split())
            same_as = first_seen.get((action_tokens, observation_tokens))
            if same_as is None:
                same_as = next(
                    (
                        j
                        for j, earlier_action, earlier_observation in distinct
                        if _alike(action_tokens, earlier_action, threshold)
                        and _alike(observation_tokens, earlier_observation, threshold)
                    ),
                    None,
                )
                first_seen[(action_tokens, observation_tokens)] = i
                distinct.append((i, action_tokens, observation_tokens))
            if same_as is not None:
                redundant += 1
                if len(details) < MAX_LISTED_STEPS:
                    details.append({"step": i, "same_as": same_as, "signature": shown(signature)})
        productive = n - redundant
        ratio = productive / n
        reference_efficiency = None if reference is None else min(1.0, reference / n)
        score = ratio if reference_efficiency is None else 0.6 * ratio + 0.4 * reference_efficiency
        reasons = [f"Step efficiency: {productive}/{n} steps are productive (ratio={ratio:.3f})"]
        if reference_efficiency is not None:
            reasons.append(
                f"Reference-based efficiency: {reference_efficiency:.3f} "
                f"(reference={reference} steps, actual={n} steps)"
            )
        if redundant:
            reasons.append(f"Redundant steps: {redundant}")
        return unit_score(
            self.name,
            max(0.0, min(1.0, score)),
            "; ".join(reasons),
            {
                "total_steps": n,
                "productive_steps": productive,
                "redundant_steps": redundant,
                "efficiency_ratio": ratio,
                "reference_step_count": reference,
                "reference_efficiency": reference_efficiency,
                "redundant_details": details,
                "redundancy_threshold": threshold,
                "evaluable": True,
                **counts,
            },
        )
