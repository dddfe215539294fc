"""The agent rule graders' unvalidated [0, 1] score is exactly the validated one."""

from __future__ import annotations

import math
import pickle

import pytest
from pydantic import JsonValue, ValidationError

from openjudge.graders.agent._results import UNIT_RANGE, unit_score
from openjudge.results import GraderScore


@pytest.mark.parametrize("score", [0.0, 0.25, 1.0, 1])
def test_a_unit_score_is_the_validated_score(score: float) -> None:
    metadata: dict[str, JsonValue] = {"action_count": 3, "each_turn_rewards": [0.5, 1.0], "note": None}
    fast = unit_score("loops", score, "3/3 pairs", metadata)
    validated = GraderScore(
        name="loops", score=score, reason="3/3 pairs", metadata=metadata, score_range=UNIT_RANGE
    )
    assert fast == validated and type(fast.score) is float
    assert fast.model_dump_json() == validated.model_dump_json()
    assert fast.model_fields_set == validated.model_fields_set
    assert pickle.loads(pickle.dumps(fast)) == validated
    # The fields set is shared between unit scores: a copy must never change it under the others.
    copied = fast.model_copy(update={"usage": None})
    assert copied.model_fields_set == validated.model_fields_set | {"usage"}
    assert unit_score("loops", score, "", {}).model_fields_set == validated.model_fields_set
    with pytest.raises(ValidationError):
        fast.score = 0.5  # type: ignore[misc]  # frozen, as a validated score is


@pytest.mark.parametrize("score", [-0.1, 1.5, math.nan, math.inf])
def test_a_score_outside_the_unit_range_is_refused_as_validation_refuses_it(score: float) -> None:
    with pytest.raises(ValidationError, match=r"finite|outside the declared range"):
        unit_score("loops", score, "", {})
