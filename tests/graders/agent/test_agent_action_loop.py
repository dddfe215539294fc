"""ActionLoopDetectionGrader: OpenJudge parity on three trajectories, metadata, edge cases, scale."""

from __future__ import annotations

import json
import time
from fractions import Fraction
from functools import partial

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from openjudge.graders.agent.action.action_loop import (
    MAX_LISTED_PAIRS,
    ActionLoopDetectionGrader,
    _similar_pairs_direct,
    _similar_pairs_grouped,
)
from openjudge.graders.agent.observation.observation_information_gain import ObservationInformationGainGrader
from openjudge.graders.agent.trajectory._trajectory_step_efficiency import TrajectoryStepEfficiencyGrader
from openjudge.graders.base_grader import BaseGrader
from openjudge.models.schema.oai.message import ChatMessage
from openjudge.results import GraderScore, ScoreRange
from tests.graders.agent._agent_support import TRAJECTORIES, JsonDict, as_error, as_score, call, grade, traj

GRADER = ActionLoopDetectionGrader()


def loop_score(messages: object, grader: ActionLoopDetectionGrader = GRADER) -> GraderScore:
    return as_score(grade(lambda: grader.aevaluate(messages=messages)))  # type: ignore[arg-type]


def step(i: int, name: str, arguments: object, observation: str = "some observation text") -> list[JsonDict]:
    return [
        {"role": "assistant", "tool_calls": [call(f"c{i}", name, arguments=arguments)]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": observation},
    ]


def test_identity() -> None:
    assert GRADER.name == "action_loop_detection"
    assert GRADER.score_range == ScoreRange(low=0.0, high=1.0)
    assert GRADER.similarity_threshold == 1.0
    assert GRADER.input_spec().required == frozenset({"messages"})


@pytest.mark.parametrize(
    ("name", "score", "similar", "total"),
    [("efficient", 1.0, 0, 3), ("looping", 0.0, 6, 6), ("partial", 1 - 1 / 6, 1, 6)],
)
def test_openjudge_scores_on_three_trajectories(name: str, score: float, similar: int, total: int) -> None:
    result = loop_score(TRAJECTORIES[name])
    assert result.score == score
    assert Fraction(result.score).limit_denominator(100) == 1 - Fraction(similar, total)
    assert result.reason == f"Loop detection: {similar}/{total} pairs are similar (threshold=1.0)"
    assert result.metadata["similar_pair_count"] == similar
    assert result.metadata["total_pair_count"] == total
    assert result.score_range == ScoreRange(low=0.0, high=1.0)


def test_partial_metadata_matches_openjudge_keys_and_values() -> None:
    metadata = loop_score(TRAJECTORIES["partial"]).metadata
    assert metadata == {
        "action_count": 4,
        "similar_pair_count": 1,
        "total_pair_count": 6,
        "similar_pairs": [["search: q: Paris weather", "search: q: Paris weather", 1.0]],
        "similar_pair_indices": [[0, 1]],
        "similar_pairs_truncated": False,
        "similarity_threshold": 1.0,
        "signatures": [
            "search: q: Paris weather",
            "search: q: Paris weather",
            "get_forecast: city: Paris",
            "noop: ",
        ],
        "unanswered_call_count": 0,
        "orphan_observation_count": 0,
    }
    assert isinstance(metadata["similar_pairs"], list)
    assert all(isinstance(pair, list) for pair in metadata["similar_pairs"])


def test_result_equals_the_validated_model() -> None:
    result = loop_score(TRAJECTORIES["looping"])
    assert GraderScore.model_validate(result.model_dump()) == result
    assert GraderScore.model_validate_json(result.model_dump_json()) == result


def test_lower_threshold_counts_partial_overlap() -> None:
    # "search: q: paris weather" vs "search: q: paris weather today": 4 of 5 tokens shared.
    messages = step(0, "search", '{"q": "Paris weather"}') + step(1, "search", '{"q": "Paris weather today"}')
    assert loop_score(messages).score == 1.0
    result = loop_score(messages, ActionLoopDetectionGrader(similarity_threshold=0.8))
    assert result.score == 0.0
    assert result.metadata["similar_pairs"] == [
        ["search: q: Paris weather", "search: q: Paris weather today", 0.8]
    ]
    assert result.reason == "Loop detection: 1/1 pairs are similar (threshold=0.8)"


def test_token_order_and_repeats_are_ignored_as_in_openjudge() -> None:
    messages = step(0, "s", '{"q": "a b"}') + step(1, "s", '{"q": "b a"}')
    assert loop_score(messages).score == 0.0


def test_punctuation_is_part_of_tokens() -> None:
    messages = step(0, "s", '{"q": "Paris, France"}') + step(1, "s", '{"q": "Paris France"}')
    assert loop_score(messages).score == 1.0


def test_unicode_is_lower_cased_and_compared() -> None:
    messages = step(0, "s", '{"q": "ÉTÉ à Paris"}') + step(1, "s", '{"q": "été À paris"}')
    result = loop_score(messages)
    assert result.score == 0.0
    assert result.metadata["signatures"] == ["s: q: ÉTÉ à Paris", "s: q: été À paris"]


@pytest.mark.parametrize("messages", [[], [{"role": "user", "content": "hi"}]])
def test_no_action_scores_one(messages: list[JsonDict]) -> None:
    result = loop_score(messages)
    assert result.score == 1.0
    assert result.reason == "Loop detection: 0/0 pairs are similar (threshold=1.0)"
    assert result.metadata["action_count"] == 0


def test_one_action_scores_one() -> None:
    result = loop_score(step(0, "search", '{"q": "x"}'))
    assert result.score == 1.0
    assert result.metadata["signatures"] == ["search: q: x"]
    assert result.metadata["total_pair_count"] == 0


def test_dict_arguments_give_the_json_string_signature() -> None:
    as_dict = step(0, "f", {"x": 1, "a": [True, None]}) + step(1, "f", {"x": 1, "a": [True, None]})
    as_text = step(0, "f", json.dumps({"x": 1, "a": [True, None]})) + step(
        1, "f", '{"a": [true, null], "x": 1}'
    )
    by_dict, by_text = loop_score(as_dict), loop_score(as_text)
    assert by_dict.metadata["signatures"] == ["f: a: [True, None], x: 1"] * 2
    assert by_dict.metadata["signatures"] == by_text.metadata["signatures"]
    assert by_dict.score == by_text.score == 0.0


def test_unanswered_calls_are_dropped_but_counted() -> None:
    # As OpenJudge 0.2.4: 3 identical calls, one answered -> action_count 1, score 1.0
    messages: list[JsonDict] = [
        {"role": "assistant", "tool_calls": [call(f"c{i}", "f", x=1) for i in range(3)]},
        {"role": "tool", "tool_call_id": "c0", "content": "answer"},
    ]
    result = loop_score(messages)
    assert result.score == 1.0
    assert result.metadata["action_count"] == 1
    assert result.metadata["unanswered_call_count"] == 2


def test_unknown_tool_call_id_is_an_orphan_not_a_crash() -> None:
    messages = [*step(0, "f", "{}"), {"role": "tool", "tool_call_id": "nope", "content": "stray"}]
    result = loop_score(messages)
    assert result.score == 1.0
    assert result.metadata["action_count"] == 1
    assert result.metadata["orphan_observation_count"] == 1


def test_wrapped_messages_and_calls() -> None:
    plain = TRAJECTORIES["partial"]
    wrapped = [
        {"message": {**m, "tool_calls": [{"tool_call": c} for c in m["tool_calls"]]}}  # type: ignore[attr-defined]
        if "tool_calls" in m
        else {"message": m}
        for m in plain
    ]
    assert loop_score(wrapped).metadata == loop_score(plain).metadata


def test_chat_message_objects() -> None:
    messages = [ChatMessage.model_validate(m) for m in TRAJECTORIES["partial"]]
    assert loop_score(messages).metadata == loop_score(TRAJECTORIES["partial"]).metadata


def test_list_of_parts_content_is_accepted() -> None:
    messages = [
        *step(0, "f", "{}"),
        {"role": "assistant", "tool_calls": [call("c1", "f", arguments="{}")]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "part"}]},
    ]
    assert loop_score(messages).score == 0.0


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ("not a list", "messages: expected a list"),
        ({"role": "user"}, "messages: expected a list"),
        (None, "messages: expected a list"),
        ([1, 2], "messages[0]: expected an OpenAI-format message"),
        ([{"message": "x"}], "messages[0].message: expected an OpenAI-format message"),
        ([{"role": "assistant", "tool_calls": "f()"}], "messages[0].tool_calls: expected a list"),
        ([{"role": "assistant", "tool_calls": [3]}], "messages[0].tool_calls[0]: expected a tool call"),
        (
            [{"role": "tool", "tool_call_id": 7, "content": "x"}],
            "messages[0].tool_call_id: expected a string",
        ),
    ],
)
def test_invalid_input_is_an_error_result(messages: object, fragment: str) -> None:
    error = as_error(grade(lambda: GRADER.aevaluate(messages=messages)))  # type: ignore[arg-type]
    assert error.kind == "invalid_input"
    assert fragment in error.message
    assert error.name == "action_loop_detection"


def test_invalid_function_field_names_the_field() -> None:
    messages = [
        {"role": "assistant", "tool_calls": [{"id": "a", "function": "f(x)"}]},
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
    ]
    error = as_error(grade(lambda: GRADER.aevaluate(messages=messages)))  # type: ignore[arg-type]
    assert error.kind == "invalid_input"
    assert "'function'" in error.message


def test_missing_messages_is_invalid_input() -> None:
    error = as_error(grade(lambda: GRADER.aevaluate()))  # type: ignore[call-arg]
    assert error.kind == "invalid_input"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "1.0", True])
def test_constructor_rejects_bad_thresholds(bad: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        ActionLoopDetectionGrader(similarity_threshold=bad)  # type: ignore[arg-type]


def test_two_thousand_identical_actions_are_fast_and_truncated() -> None:
    n = 2000
    messages = traj([("search", {"q": "same"}, "same observation text")] * n)
    start = time.perf_counter()
    result = loop_score(messages)
    assert time.perf_counter() - start < 5.0
    assert result.score == 0.0
    assert result.metadata["similar_pair_count"] == n * (n - 1) // 2
    assert result.metadata["similar_pairs_truncated"] is True
    indices = result.metadata["similar_pair_indices"]
    assert isinstance(indices, list)
    assert len(indices) == MAX_LISTED_PAIRS
    assert indices[:2] == [[0, 1], [0, 2]]
    assert indices[-1] == [0, MAX_LISTED_PAIRS]


def test_ten_thousand_steps_finish() -> None:
    # Ten distinct calls repeated: grouping makes this O(n) at threshold 1.0.
    n = 10_000
    messages = traj([(f"tool{i % 10}", {"q": i % 10}, f"observation {i}") for i in range(n)])
    result = loop_score(messages)
    similar = 10 * (1000 * 999 // 2)
    assert result.metadata["similar_pair_count"] == similar
    assert result.score == 1.0 - similar / (n * (n - 1) // 2)


@pytest.mark.slow
def test_two_thousand_distinct_actions_at_partial_threshold() -> None:
    n = 2000  # O(n²): 2 million token-set comparisons
    messages = traj([("search", {"q": f"weather in city {i}"}, "x" * 12) for i in range(n)])
    result = loop_score(messages, ActionLoopDetectionGrader(similarity_threshold=0.5))
    # "search: q: weather in city {i}": 5 of 7 tokens shared by every pair -> 5/7 >= 0.5
    assert result.score == 0.0
    assert result.metadata["similar_pairs"][0] == [  # type: ignore[index]
        "search: q: weather in city 0",
        "search: q: weather in city 1",
        5 / 7,
    ]


_token_sets = st.lists(st.frozensets(st.sampled_from("abcde"), max_size=4), max_size=12)


@given(
    sets=_token_sets,
    threshold=st.sampled_from([0.0, 0.25, 0.5, 1 / 3, 0.75, 1.0, 1.5, -1.0]),
    limit=st.integers(0, 30),
)
def test_grouped_pair_search_equals_the_double_loop(
    sets: list[frozenset[str]], threshold: float, limit: int
) -> None:
    assert _similar_pairs_grouped(sets, threshold, limit) == _similar_pairs_direct(sets, threshold, limit)


@given(sets=_token_sets, threshold=st.sampled_from([0.0, 0.5, 0.75]))
def test_double_loop_equals_the_definition(sets: list[frozenset[str]], threshold: float) -> None:
    expected = [
        (i, j, len(a & b) / len(a | b) if a and b else 0.0)
        for i, a in enumerate(sets)
        for j, b in enumerate(sets)
        if i < j and (len(a & b) / len(a | b) if a and b else 0.0) >= threshold
    ]
    assert _similar_pairs_direct(sets, threshold, 10**6) == (len(expected), expected)


def test_backend_agnostic_and_safe_to_share_across_tasks() -> None:
    graders = (GRADER, ObservationInformationGainGrader(), TrajectoryStepEfficiencyGrader())
    expected = [grade(partial(g.aevaluate, messages=m)) for g in graders for m in TRAJECTORIES.values()]

    async def concurrently() -> list[object]:
        results: list[object] = [None] * (len(expected) * 20)
        async with anyio.create_task_group() as tasks:
            for k in range(len(results)):
                grader = graders[(k % len(expected)) // len(TRAJECTORIES)]
                messages = list(TRAJECTORIES.values())[k % len(TRAJECTORIES)]

                async def one(
                    k: int = k, grader: BaseGrader = grader, messages: list[JsonDict] = messages
                ) -> None:
                    results[k] = await grader.aevaluate(messages=messages)

                tasks.start_soon(one)
        return results

    for backend in ("asyncio", "trio"):
        assert anyio.run(concurrently, backend=backend) == expected * 20
