"""Property tests: the agent graders never raise, stay in range, and match OpenJudge on valid input."""

from __future__ import annotations

import json
from functools import partial

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openjudge.graders.agent.action.action_loop import ActionLoopDetectionGrader
from openjudge.graders.agent.observation.observation_information_gain import ObservationInformationGainGrader
from openjudge.graders.agent.tool._tool_call_precision_recall_match import ToolCallPrecisionRecallMatchGrader
from openjudge.graders.agent.tool._tool_call_step_sequence_match import ToolCallStepSequenceMatchGrader
from openjudge.graders.agent.trajectory._trajectory_step_efficiency import TrajectoryStepEfficiencyGrader
from openjudge.results import GraderError, GraderResult, GraderScore, ScoreRange
from tests.graders.agent._agent_support import (
    JsonDict,
    as_score,
    grade,
    reference_action_loop,
    reference_info_gain,
)

UNIT = ScoreRange(low=0.0, high=1.0)
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- arbitrary JSON-like input, biased towards message shapes -----------------------------------

_KEYS = [
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "message",
    "tool_call",
    "function",
    "name",
    "arguments",
    "id",
    "type",
    "text",
]
_keys = st.sampled_from(_KEYS) | st.text(max_size=4)
_roles = st.sampled_from(["assistant", "tool", "function", "user", "system"])
_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12) | _roles
_json = st.recursive(
    _leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=5),
    max_leaves=20,
)
_ids = st.sampled_from(["a", "b", ""]) | _json
_function = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["f", "g"]) | _json,
        "arguments": st.sampled_from(['{"x": 1}', "{}", "[1]", "nope", ""]) | _json,
    },
)
_call = st.fixed_dictionaries({}, optional={"id": _ids, "function": _function | _json, "type": _json})
_call_like = _call | st.builds(lambda c: {"tool_call": c}, _call) | _json
_message = st.fixed_dictionaries(
    {"role": _roles | _json},
    optional={
        "content": st.text(max_size=40) | _json,
        "tool_calls": st.lists(_call_like, max_size=3) | _json,
        "tool_call_id": _ids,
    },
)
_message_like = _message | st.builds(lambda m: {"message": m}, _message | _json) | _json
_messages = st.lists(_message_like, max_size=8) | _json


def check(result: GraderResult) -> None:
    if isinstance(result, GraderError):
        assert result.kind == "invalid_input", result
        assert result.message
        return
    assert isinstance(result, GraderScore)
    assert 0.0 <= result.score <= 1.0
    assert result.score_range == UNIT


def check_fast_built(result: GraderResult) -> None:
    """Results built without validation must equal the validated model."""
    check(result)
    if isinstance(result, GraderScore):
        assert GraderScore.model_validate(result.model_dump()) == result
        json.loads(result.model_dump_json())


LOOP = ActionLoopDetectionGrader()
LOOP_PARTIAL = ActionLoopDetectionGrader(similarity_threshold=0.4)
GAIN = ObservationInformationGainGrader()
EFFICIENCY = TrajectoryStepEfficiencyGrader()
RECALL = ToolCallPrecisionRecallMatchGrader(match_arguments=True)
SEQUENCE = ToolCallStepSequenceMatchGrader()


@pytest.mark.slow  # 150 hostile trajectories through every grader (8 s)
@FUZZ
@given(_messages)
def test_trajectory_graders_never_raise(messages: object) -> None:
    for grader in (LOOP, LOOP_PARTIAL, GAIN, EFFICIENCY):
        check_fast_built(grade(partial(grader.aevaluate, messages=messages)))  # type: ignore[arg-type]


@pytest.mark.slow  # 150 hostile tool-call sets through every grader (8 s)
@FUZZ
@given(
    _messages,
    st.lists(_call_like, max_size=4) | _json,
    st.lists(_call_like | st.text(max_size=3), max_size=4),
)
def test_tool_graders_never_raise(messages: object, predicted: object, reference: object) -> None:
    for evaluate in (RECALL.aevaluate, SEQUENCE.aevaluate):
        check(grade(partial(evaluate, messages=messages, reference_tool_calls=reference)))  # type: ignore[arg-type]
        check(grade(partial(evaluate, tool_calls=predicted, reference_tool_calls=reference)))  # type: ignore[arg-type]


# --- well-formed trajectories: exact parity with OpenJudge's algorithms ---------------------------

_words = st.sampled_from(["Paris", "paris,", "weather", "sunny", "22C", "rain", "wind", "été", "a", "B"])
_text = st.lists(_words, max_size=7).map(" ".join)
_value = st.none() | st.booleans() | st.integers(-3, 3) | _text | st.lists(_text, max_size=2)
_arguments = st.dictionaries(st.sampled_from(["q", "city", "n", "Q"]), _value, max_size=3)
_step = st.tuples(
    st.sampled_from(["search", "get", "Search", ""]), _arguments, _text | st.sampled_from(["ok", ""])
)


@st.composite
def _trajectories(draw: st.DrawFn) -> list[JsonDict]:
    """Valid trajectories: steps answered in order, with ids or FIFO, some parallel calls, some wrapped."""
    steps = draw(st.lists(_step, max_size=8))
    with_ids = draw(st.booleans())
    messages: list[JsonDict] = [{"role": "user", "content": "go"}]
    i = 0
    while i < len(steps):
        batch = steps[i : i + draw(st.integers(1, 3))]
        calls = []
        for k, (name, args, _) in enumerate(batch):
            function = {"name": name, "arguments": json.dumps(args)}
            calls.append({"id": f"c{i + k}", "function": function} if with_ids else {"function": function})
        messages.append({"role": "assistant", "content": "", "tool_calls": calls})
        for k, (_, _, observation) in enumerate(batch):
            tool: JsonDict = {"role": "tool", "content": observation}
            if with_ids:
                tool["tool_call_id"] = f"c{i + k}"
            messages.append(tool)
        i += len(batch)
    if draw(st.booleans()):
        messages = [{"message": m} for m in messages]
    return messages


@settings(max_examples=200, deadline=None)
@given(_trajectories(), st.sampled_from([1.0, 0.5, 0.3, 0.0]))
def test_action_loop_matches_openjudge(messages: list[JsonDict], threshold: float) -> None:
    result = as_score(grade(partial(ActionLoopDetectionGrader(threshold).aevaluate, messages=messages)))
    score, similar, total = reference_action_loop(messages, threshold)
    assert result.score == score
    assert result.metadata["similar_pair_count"] == similar
    assert result.metadata["total_pair_count"] == total


@settings(max_examples=200, deadline=None)
@given(_trajectories(), st.sampled_from([0.5, 0.2, 0.9]))
def test_information_gain_matches_openjudge(messages: list[JsonDict], threshold: float) -> None:
    result = as_score(
        grade(partial(ObservationInformationGainGrader(threshold).aevaluate, messages=messages))
    )
    score, rewards, similarities = reference_info_gain(messages, threshold)
    assert result.score == score
    if len(messages) > 1:  # with no pair at all the metadata is the "not evaluable" form
        assert result.metadata["each_turn_rewards"] == rewards
        assert result.metadata["each_turn_similarity"] == similarities
