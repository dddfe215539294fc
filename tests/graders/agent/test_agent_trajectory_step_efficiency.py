"""TrajectoryStepEfficiencyGrader: redundancy rule, reference step count, edge cases."""

from __future__ import annotations

import pytest

from openjudge.graders.agent.trajectory._trajectory_step_efficiency import (
    MAX_LISTED_STEPS,
    TrajectoryStepEfficiencyGrader,
)
from openjudge.results import GraderResult, GraderScore, ScoreRange
from tests.graders.agent._agent_support import TRAJECTORIES, as_error, as_score, grade, traj

GRADER = TrajectoryStepEfficiencyGrader()


def run(grader: TrajectoryStepEfficiencyGrader = GRADER, **inputs: object) -> GraderResult:
    return grade(lambda: grader.aevaluate(**inputs))  # type: ignore[arg-type]


def efficiency(messages: object, **inputs: object) -> GraderScore:
    return as_score(run(GRADER, messages=messages, **inputs))


def test_identity() -> None:
    assert GRADER.name == "trajectory_step_efficiency"
    assert GRADER.score_range == ScoreRange(low=0.0, high=1.0)
    assert GRADER.redundancy_threshold == 0.8
    assert GRADER.input_spec().optional == frozenset({"reference_step_count"})


@pytest.mark.parametrize(
    ("name", "redundant", "total"),
    [("efficient", 0, 3), ("looping", 3, 4), ("partial", 0, 4)],
)
def test_three_trajectories(name: str, redundant: int, total: int) -> None:
    result = efficiency(TRAJECTORIES[name])
    ratio = (total - redundant) / total
    assert result.score == ratio
    assert result.metadata["redundant_steps"] == redundant
    assert result.metadata["total_steps"] == total
    expected_reason = f"Step efficiency: {total - redundant}/{total} steps are productive (ratio={ratio:.3f})"
    if redundant:
        expected_reason += f"; Redundant steps: {redundant}"
    assert result.reason == expected_reason


def test_looping_details_point_at_the_first_occurrence() -> None:
    details = efficiency(TRAJECTORIES["looping"]).metadata["redundant_details"]
    assert details == [{"step": i, "same_as": 0, "signature": "search: q: Paris weather"} for i in (1, 2, 3)]


def test_same_call_with_new_information_is_productive() -> None:
    messages = traj(
        [
            ("status", {"job": 1}, "job 1 is queued behind 4 others"),
            ("status", {"job": 1}, "job 1 finished: 1,204 rows written to the table"),
        ]
    )
    assert efficiency(messages).score == 1.0


def test_similar_but_not_identical_steps_are_redundant_above_the_threshold() -> None:
    messages = traj(
        [
            ("search", {"q": "paris weather today now"}, "sunny warm dry calm clear bright"),
            ("search", {"q": "paris weather today"}, "sunny warm dry calm clear"),
        ]
    )
    # signatures share 5 of 6 tokens, observations 5 of 6: both 0.833 >= 0.8
    assert efficiency(messages).metadata["redundant_steps"] == 1
    strict = TrajectoryStepEfficiencyGrader(redundancy_threshold=0.9)
    assert as_score(run(strict, messages=messages)).metadata["redundant_steps"] == 0


def test_identical_calls_with_empty_answers_are_redundant() -> None:
    messages = traj([("ping", {}, ""), ("ping", {}, "")])
    assert efficiency(messages).metadata["redundant_steps"] == 1


@pytest.mark.parametrize(
    ("reference", "ref_efficiency"),
    [(2, 0.5), (4, 1.0), (10, 1.0)],
)
def test_reference_step_count(reference: int, ref_efficiency: float) -> None:
    result = efficiency(TRAJECTORIES["looping"], reference_step_count=reference)
    assert result.score == 0.6 * 0.25 + 0.4 * ref_efficiency
    assert result.metadata["reference_efficiency"] == ref_efficiency
    assert result.metadata["reference_step_count"] == reference
    assert (
        f"Reference-based efficiency: {ref_efficiency:.3f} (reference={reference} steps, actual=4 steps)"
        in (result.reason)
    )


def test_reference_from_constructor_and_override() -> None:
    grader = TrajectoryStepEfficiencyGrader(reference_step_count=2)
    assert as_score(run(grader, messages=TRAJECTORIES["efficient"])).score == 0.6 * 1.0 + 0.4 * (2 / 3)
    overridden = as_score(run(grader, messages=TRAJECTORIES["efficient"], reference_step_count=3))
    assert overridden.score == 1.0


def test_no_steps_is_zero_and_not_evaluable() -> None:
    result = efficiency([{"role": "user", "content": "hi"}], reference_step_count=3)
    assert result.score == 0.0
    assert result.metadata["evaluable"] is False
    assert result.reason == "No action-observation pairs found - unable to evaluate step efficiency"


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "3"])
def test_bad_reference_step_count(bad: object) -> None:
    error = as_error(run(messages=TRAJECTORIES["efficient"], reference_step_count=bad))
    assert error.kind == "invalid_input"
    assert "reference_step_count" in error.message
    with pytest.raises(ValueError, match="reference_step_count"):
        TrajectoryStepEfficiencyGrader(reference_step_count=bad)  # type: ignore[arg-type]


def test_two_thousand_steps() -> None:
    n = 2000
    messages = traj([("search", {"q": i % 100}, f"answer {i % 100}: " + "filler " * 5) for i in range(n)])
    result = efficiency(messages)
    assert result.metadata["redundant_steps"] == n - 100
    assert result.score == 100 / n
    details = result.metadata["redundant_details"]
    assert isinstance(details, list)
    assert len(details) == min(MAX_LISTED_STEPS, n - 100)
