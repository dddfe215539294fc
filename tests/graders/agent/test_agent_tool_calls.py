"""ToolCallPrecisionRecallMatchGrader and ToolCallStepSequenceMatchGrader."""

from __future__ import annotations

from functools import partial

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openjudge.graders.agent.tool._tool_call_precision_recall_match import ToolCallPrecisionRecallMatchGrader
from openjudge.graders.agent.tool._tool_call_step_sequence_match import (
    ToolCallStepSequenceMatchGrader,
    lcs_length,
)
from openjudge.results import GraderResult, GraderScore, ScoreRange
from tests.graders.agent._agent_support import TRAJECTORIES, JsonDict, as_error, as_score, call, grade

RECALL = ToolCallPrecisionRecallMatchGrader()
PRECISION = ToolCallPrecisionRecallMatchGrader(metric_type="precision")
STRICT_RECALL = ToolCallPrecisionRecallMatchGrader(match_arguments=True)
SEQUENCE = ToolCallStepSequenceMatchGrader()


def pr(grader: ToolCallPrecisionRecallMatchGrader, **inputs: object) -> GraderResult:
    return grade(lambda: grader.aevaluate(**inputs))  # type: ignore[arg-type]


def seq(grader: ToolCallStepSequenceMatchGrader, **inputs: object) -> GraderResult:
    return grade(lambda: grader.aevaluate(**inputs))  # type: ignore[arg-type]


PREDICTED: list[JsonDict] = [
    {"name": "search", "arguments": {"q": "paris"}},
    {"name": "search", "arguments": '{"q": "rome"}'},
    {"function": {"name": "weather", "arguments": '{"city": "paris"}'}},
]
REFERENCE: list[JsonDict] = [
    {"tool_call": {"function": {"name": "search", "arguments": {"q": "paris"}}}},
    {"name": "weather", "arguments": {"city": "Paris"}},
    {"name": "book", "arguments": {}},
]


def test_identity() -> None:
    for grader, name in [
        (RECALL, "tool_call_precision_recall_match"),
        (SEQUENCE, "tool_call_step_sequence_match"),
    ]:
        assert grader.name == name
        assert grader.score_range == ScoreRange(low=0.0, high=1.0)
    assert RECALL.input_spec().required == frozenset({"reference_tool_calls"})
    assert RECALL.input_spec().optional == frozenset({"tool_calls", "messages"})


def test_loose_recall_and_precision() -> None:
    recall = as_score(pr(RECALL, tool_calls=PREDICTED, reference_tool_calls=REFERENCE))
    # names: predicted {search: 2, weather: 1}, reference {search: 1, weather: 1, book: 1} -> TP 2
    assert recall.score == 2 / 3
    assert recall.reason == "Tool call recall: 0.667 (2/3) using loose (name only) matching"
    assert recall.metadata["matched_keys"] == ["search", "weather"]
    assert recall.metadata["missing_keys"] == ["book"]
    assert recall.metadata["unexpected_keys"] == ["search"]
    assert recall.metadata["f1"] == 2 / 3
    precision = as_score(pr(PRECISION, tool_calls=PREDICTED, reference_tool_calls=REFERENCE))
    assert precision.score == 2 / 3
    assert precision.metadata["metric_type"] == "precision"


def test_strict_matching_compares_canonical_arguments() -> None:
    result = as_score(pr(STRICT_RECALL, tool_calls=PREDICTED, reference_tool_calls=REFERENCE))
    # search {"q": "paris"} matches whether given as dict or string; "paris" != "Paris"
    assert result.score == 1 / 3
    assert result.metadata["matched_keys"] == ['search:{"q":"paris"}']
    assert result.reason == "Tool call recall: 0.333 (1/3) using strict (name + arguments) matching"


def test_argument_key_order_and_spacing_do_not_matter() -> None:
    predicted = [{"name": "f", "arguments": '{ "b" : 2, "a" : 1 }'}]
    reference = [{"name": "f", "arguments": {"a": 1, "b": 2}}]
    assert as_score(pr(STRICT_RECALL, tool_calls=predicted, reference_tool_calls=reference)).score == 1.0


def test_unparsable_arguments_do_not_match_empty_arguments() -> None:
    predicted = [{"name": "f", "arguments": "{broken"}]
    assert (
        as_score(pr(STRICT_RECALL, tool_calls=predicted, reference_tool_calls=[{"name": "f"}])).score == 0.0
    )
    assert as_score(pr(STRICT_RECALL, tool_calls=predicted, reference_tool_calls=predicted)).score == 1.0


def test_calls_can_come_from_messages() -> None:
    result = as_score(
        pr(RECALL, messages=TRAJECTORIES["partial"], reference_tool_calls=["search", "get_forecast", "noop"])
    )
    assert result.score == 1.0
    assert result.metadata["total_predicted"] == 4


@pytest.mark.parametrize(
    ("predicted", "reference", "precision", "recall"),
    [([], [], 1.0, 1.0), ([], ["a"], 0.0, 0.0), (["a"], [], 0.0, 0.0)],
)
def test_empty_sides(predicted: list[str], reference: list[str], precision: float, recall: float) -> None:
    assert as_score(pr(PRECISION, tool_calls=predicted, reference_tool_calls=reference)).score == precision
    assert as_score(pr(RECALL, tool_calls=predicted, reference_tool_calls=reference)).score == recall


@pytest.mark.parametrize(
    ("inputs", "fragment"),
    [
        ({"reference_tool_calls": []}, "give exactly one of 'tool_calls'"),
        ({"reference_tool_calls": [], "tool_calls": [], "messages": []}, "give exactly one of 'tool_calls'"),
        ({"reference_tool_calls": "search", "tool_calls": []}, "reference_tool_calls: expected a list"),
        ({"reference_tool_calls": [3], "tool_calls": []}, "reference_tool_calls[0]: expected a tool call"),
        ({"reference_tool_calls": [{"name": 1}], "tool_calls": []}, "reference_tool_calls[0].name: expected"),
        ({"reference_tool_calls": [], "messages": "hi"}, "messages: expected a list"),
    ],
)
def test_invalid_inputs(inputs: dict[str, object], fragment: str) -> None:
    for evaluate in (RECALL.aevaluate, SEQUENCE.aevaluate):
        error = as_error(grade(partial(evaluate, **inputs)))  # type: ignore[arg-type]
        assert error.kind == "invalid_input"
        assert fragment in error.message


@pytest.mark.parametrize(
    ("calls", "fragment"),
    [
        ([{"name": 1}], "tool_calls[0].name: expected a string"),
        ([{"name": "f", "arguments": {"s": {1, 2}}}], "tool_calls[0].arguments"),
        ([{"function": []}], "tool_calls[0].function"),
        ([7], "tool_calls[0]: expected a tool call"),
    ],
)
def test_a_malformed_predicted_call_is_the_responses_failure(calls: list[object], fragment: str) -> None:
    for evaluate in (RECALL.aevaluate, SEQUENCE.aevaluate):
        result = grade(partial(evaluate, reference_tool_calls=["f"], tool_calls=calls))  # type: ignore[arg-type]  # deliberately malformed
        assert isinstance(result, GraderScore) and result.score == 0.0, result
        assert result.metadata == {"blame": "response", "cause": "malformed_tool_call"}
        assert fragment in result.reason


def test_constructor_rejects_unknown_metric() -> None:
    with pytest.raises(ValueError, match="metric_type"):
        ToolCallPrecisionRecallMatchGrader(metric_type="f1")  # type: ignore[arg-type]


# --- sequence ------------------------------------------------------------------------------------


def seq_score(predicted: list[str], reference: list[object]) -> GraderScore:
    return as_score(seq(SEQUENCE, tool_calls=predicted, reference_tool_calls=reference))


@pytest.mark.parametrize(
    ("predicted", "reference", "lcs"),
    [
        (["a", "b", "c"], ["a", "b", "c"], 3),
        (["a", "c"], ["a", "b", "c"], 2),  # a step skipped
        (["a", "x", "b", "c"], ["a", "b", "c"], 3),  # an extra step
        (["c", "b", "a"], ["a", "b", "c"], 1),  # reversed
        (["a", "a", "a"], ["a"], 1),  # repeats
        (["x"], ["a", "b"], 0),
    ],
)
def test_sequence_score_is_two_lcs_over_total_length(
    predicted: list[str], reference: list[str], lcs: int
) -> None:
    result = seq_score(predicted, list(reference))
    assert result.metadata["lcs_length"] == lcs
    assert result.score == 2 * lcs / (len(predicted) + len(reference))
    assert result.metadata["sequence_precision"] == lcs / len(predicted)
    assert result.metadata["sequence_recall"] == lcs / len(reference)


def test_sequence_of_empty_lists() -> None:
    assert seq_score([], []).score == 1.0
    assert seq_score([], ["a"]).score == 0.0
    assert seq_score(["a"], []).score == 0.0


def test_reference_may_be_steps_of_parallel_calls() -> None:
    reference: list[object] = [[{"name": "a"}, {"name": "b"}], [{"function": {"name": "c"}}]]
    result = seq_score(["a", "b", "c"], reference)
    assert result.score == 1.0
    assert result.metadata["reference_sequence"] == ["a", "b", "c"]


def test_sequence_from_messages_and_with_arguments() -> None:
    reference = [
        {"name": "search", "arguments": {"q": "Paris weather"}},
        {"name": "get_forecast", "arguments": {"city": "Paris"}},
    ]
    loose = as_score(seq(SEQUENCE, messages=TRAJECTORIES["partial"], reference_tool_calls=reference))
    assert loose.metadata["predicted_sequence"] == ["search", "search", "get_forecast", "noop"]
    assert loose.score == 2 * 2 / 6
    strict = ToolCallStepSequenceMatchGrader(match_arguments=True)
    exact = as_score(
        seq(strict, tool_calls=[call("1", "search", q="Paris weather")], reference_tool_calls=reference)
    )
    assert exact.metadata["lcs_length"] == 1


def lcs_table(a: list[str], b: list[str]) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        previous_diagonal = 0
        for j, y in enumerate(b, start=1):
            above = row[j]
            row[j] = previous_diagonal + 1 if x == y else max(row[j], row[j - 1])
            previous_diagonal = above
    return row[-1]


@given(st.lists(st.sampled_from("abcd"), max_size=20), st.lists(st.sampled_from("abcd"), max_size=20))
def test_bit_parallel_lcs_equals_the_dynamic_program(a: list[str], b: list[str]) -> None:
    assert lcs_length(a, b) == lcs_table(a, b) == lcs_length(b, a)


def test_long_sequences_are_fast() -> None:
    a = [f"tool{i % 37}" for i in range(2000)]
    b = [f"tool{i % 41}" for i in range(2000)]
    assert lcs_length(a[:300], b[:300]) == lcs_table(a[:300], b[:300])
    result = seq_score(a, list(b))
    assert 0.0 < result.score < 1.0
