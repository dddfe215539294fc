"""Pairing, signatures and similarity shared by the agent graders."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openjudge.graders.agent._trajectory_parsing import (
    _json_object,
    action_signature,
    extract_action_observation_pairs,
    extract_tool_calls,
    jaccard,
    text_similarity,
    token_set,
)
from openjudge.graders.base_grader import InvalidInputError
from openjudge.models.schema.oai.message import ChatMessage
from tests.graders.agent._agent_support import (
    TRAJECTORIES,
    JsonDict,
    call,
    reference_pairs,
    reference_signature,
)


def names(actions: list[Mapping[str, object]]) -> list[object]:
    return [action["function"]["name"] for action in actions]  # type: ignore[index]


@pytest.mark.parametrize("name", list(TRAJECTORIES))
def test_pairs_match_openjudge_on_three_trajectories(name: str) -> None:
    pairs = extract_action_observation_pairs(TRAJECTORIES[name])
    expected = reference_pairs(TRAJECTORIES[name])
    assert list(zip(pairs.actions, pairs.observations, strict=True)) == expected
    assert pairs.unanswered_call_count == pairs.orphan_observation_count == 0


def test_ids_match_out_of_order_answers() -> None:
    messages: list[JsonDict] = [
        {"role": "assistant", "tool_calls": [call("a", "first"), call("b", "second")]},
        {"role": "tool", "tool_call_id": "b", "content": "B"},
        {"role": "tool", "tool_call_id": "a", "content": "A"},
    ]
    pairs = extract_action_observation_pairs(messages)
    assert names(pairs.actions) == ["second", "first"]  # in observation order, as in OpenJudge
    assert pairs.observations == ["B", "A"]


def test_calls_without_ids_are_answered_first_in_first_out() -> None:
    messages: list[JsonDict] = [
        {"role": "assistant", "tool_calls": [call(None, "one"), call("", "two")]},
        {"role": "assistant", "tool_calls": [call(None, "three")]},
        {"role": "tool", "content": "1"},
        {"role": "function", "tool_call_id": None, "content": "2"},
        {"role": "tool", "tool_call_id": "", "content": "3"},
    ]
    pairs = extract_action_observation_pairs(messages)
    assert names(pairs.actions) == ["one", "two", "three"]
    assert pairs.observations == ["1", "2", "3"]


def test_unknown_ids_and_surplus_observations_are_orphans() -> None:
    messages: list[JsonDict] = [
        {"role": "assistant", "tool_calls": [call("a", "f")]},
        {"role": "tool", "tool_call_id": "zzz", "content": "unknown id"},
        {"role": "tool", "content": "no id, nothing pending"},
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
        {"role": "tool", "tool_call_id": "a", "content": "answered twice"},
    ]
    pairs = extract_action_observation_pairs(messages)
    assert pairs.observations == ["ok"]
    assert pairs.orphan_observation_count == 3
    assert pairs.unanswered_call_count == 0


def test_unanswered_and_replaced_calls_are_counted() -> None:
    messages: list[JsonDict] = [
        {"role": "assistant", "tool_calls": [call("a", "old"), call(None, "idless"), call("b", "never")]},
        {"role": "assistant", "tool_calls": [call("a", "new")]},  # same id: replaces "old"
        {"role": "tool", "tool_call_id": "a", "content": "x"},
    ]
    pairs = extract_action_observation_pairs(messages)
    assert names(pairs.actions) == ["new"]
    assert pairs.unanswered_call_count == 3  # "old" (replaced), "idless", "never"


def test_none_and_empty_content_read_as_empty_text() -> None:
    messages: list[JsonDict] = [
        {"role": "assistant", "tool_calls": [call("a", "f"), call("b", "f")]},
        {"role": "tool", "tool_call_id": "a", "content": None},
        {"role": "tool", "tool_call_id": "b"},
    ]
    assert extract_action_observation_pairs(messages).observations == ["", ""]


def test_content_parts_are_joined_with_newlines() -> None:
    content = [
        "plain",
        {"type": "text", "text": "typed"},
        {"type": "image_url", "image_url": {}},
        {"text": "no type"},
    ]
    messages: list[JsonDict] = [
        {"role": "assistant", "tool_calls": [call("a", "f")]},
        {"role": "tool", "tool_call_id": "a", "content": content},
    ]
    assert extract_action_observation_pairs(messages).observations == ["plain\ntyped"]


def test_message_and_tool_call_wrappers_unwrap_one_level() -> None:
    messages: list[object] = [
        {"message": {"role": "assistant", "tool_calls": [{"tool_call": call("a", "f")}]}},
        {"message": ChatMessage(role="tool", tool_call_id="a", content="done")},
    ]
    pairs = extract_action_observation_pairs(messages)
    assert names(pairs.actions) == ["f"]
    assert pairs.observations == ["done"]


def test_tuples_are_accepted_as_lists() -> None:
    messages = (
        {"role": "assistant", "tool_calls": (call("a", "f"),)},
        {"role": "tool", "tool_call_id": "a", "content": ("x", "y")},
    )
    assert extract_action_observation_pairs(messages).observations == ["x\ny"]


def test_extract_tool_calls_lists_every_call_in_order() -> None:
    messages: list[JsonDict] = [
        {"role": "assistant", "tool_calls": [call("a", "one"), {"tool_call": call("b", "two")}]},
        {"role": "tool", "tool_call_id": "a", "content": "x"},
        {"role": "assistant", "content": "thinking"},
        {"message": {"role": "assistant", "tool_calls": [call(None, "three")]}},
    ]
    assert names(extract_tool_calls(messages)) == ["one", "two", "three"]


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ("text", "messages: expected a list"),
        (b"bytes", "messages: expected a list"),
        ([None], "messages[0]: expected an OpenAI-format message"),
        ([{"message": None}], "messages[0].message"),
        ([{"role": "assistant", "tool_calls": {"id": "a"}}], "messages[0].tool_calls: expected a list"),
        ([{"role": "assistant", "tool_calls": [{"tool_call": "x"}]}], "messages[0].tool_calls[0]: expected"),
        (
            [{"role": "assistant", "tool_calls": [{"id": 5}]}],
            "messages[0].tool_calls[0].id: expected a string",
        ),
        ([{"role": "tool", "tool_call_id": ["a"]}], "messages[0].tool_call_id: expected a string"),
        (
            [{"role": "assistant", "tool_calls": [call(None, "f")]}, {"role": "tool", "content": 12}],
            "messages[1].content: expected a string or a list",
        ),
        (
            [{"role": "assistant", "tool_calls": [call(None, "f")]}, {"role": "tool", "content": [1]}],
            "messages[1].content[0]: expected a content part",
        ),
    ],
)
def test_malformed_structure_names_the_field(messages: object, fragment: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        extract_action_observation_pairs(messages)
    assert fragment in str(caught.value)


def test_roles_of_other_types_are_ignored() -> None:
    messages: list[JsonDict] = [{"role": ["tool"], "content": 1}, {"role": None}, {"content": "no role"}]
    pairs = extract_action_observation_pairs(messages)
    assert pairs.actions == []
    assert pairs.orphan_observation_count == 0


# --- signatures --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("function", "signature"),
    [
        ({"name": "search", "arguments": '{"q": "x", "a": 1}'}, "search: a: 1, q: x"),
        (
            {"name": "f", "arguments": '{"b": true, "n": null, "l": ["a"], "d": {"k": 1.5}}'},
            "f: b: True, d: {'k': 1.5}, l: ['a'], n: None",
        ),
        ({"name": "f", "arguments": "{}"}, "f: "),
        ({"name": "f", "arguments": ""}, "f"),
        ({"name": "f"}, "f"),
        ({"name": "f", "arguments": "[1, 2]"}, "f: [1, 2]"),
        ({"name": "f", "arguments": "not json"}, "f: not json"),
        ({"name": "f", "arguments": "null"}, "f: null"),
        ({"name": "f", "arguments": ' {"q": 1} '}, "f: q: 1"),
        ({"name": "f", "arguments": '{"q": 1} x'}, 'f: {"q": 1} x'),
        ({"arguments": '{"q": 1}'}, ": q: 1"),
        ({}, ""),
    ],
)
def test_signature_matches_openjudge(function: JsonDict, signature: str) -> None:
    action: JsonDict = {"id": "a", "function": function}
    assert action_signature(action) == reference_signature(action) == signature


def test_signature_where_openjudge_crashes() -> None:
    assert action_signature({"id": "a"}) == ""  # no "function"
    assert action_signature({"function": None}) == ""
    assert action_signature({"function": {"name": None, "arguments": '{"a": 1}'}}) == ": a: 1"
    assert action_signature({"function": {"name": "f", "arguments": None}}) == "f"  # OpenJudge: TypeError
    assert action_signature({"function": {"name": "f", "arguments": {"a": 1}}}) == "f: a: 1"  # TypeError


@pytest.mark.parametrize(
    "arguments",
    [{"q": "x", "a": [1, None]}, {}, {"nested": {"b": 2, "a": 1}}, [1, "a"], 3, True, 2.5],
)
def test_parsed_arguments_sign_like_their_json_text(arguments: object) -> None:
    parsed = action_signature({"function": {"name": "f", "arguments": arguments}})
    as_text = action_signature({"function": {"name": "f", "arguments": json.dumps(arguments)}})
    assert parsed == as_text


def test_python_only_values_in_dict_arguments_are_normalised_through_json() -> None:
    assert action_signature({"function": {"name": "f", "arguments": {1: (1, 2)}}}) == "f: 1: [1, 2]"


@pytest.mark.parametrize(
    ("function", "fragment"),
    [
        ({"name": 3}, "'function.name'"),
        ({"name": "f", "arguments": {"s": {1, 2}}}, "not JSON-serialisable"),
    ],
)
def test_signature_rejects_unusable_types(function: JsonDict, fragment: str) -> None:
    with pytest.raises(InvalidInputError, match=fragment):
        action_signature({"function": function})


def test_unreadable_json_falls_back_to_the_raw_text() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert action_signature({"function": {"name": "f", "arguments": deep}}) == "f: " + deep
    huge_int = "1" * 5000  # beyond Python's int-from-string limit
    assert action_signature({"function": {"name": "f", "arguments": huge_int}}) == "f: " + huge_int


def json_object(text: str) -> object:
    """What ``_json_object`` must return: json.loads's value if it is a dict, else None."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


@given(st.text(max_size=30))
def test_json_object_behaves_like_json_loads(text: str) -> None:
    assert repr(_json_object(text)) == repr(json_object(text))


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
        max_leaves=8,
    ),
    st.sampled_from([None, 0, 2]),
    st.sampled_from(["", " ", "\n ", " x", "}"]),
)
def test_json_object_reads_documents_like_json_loads(value: object, indent: int | None, suffix: str) -> None:
    text = json.dumps(value, indent=indent) + suffix
    assert repr(_json_object(text)) == repr(json_object(text))
    assert repr(_json_object(" " + text)) == repr(json_object(" " + text))


# --- similarity --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("hello world", "world hello", 1.0),
        ("hello", "world", 0.0),
        ("", "anything", 0.0),
        ("   ", "   ", 0.0),
        ("A b c", "a B d", 0.5),
        ("paris, france", "paris france", 1 / 3),
        ("a a a b", "a b b", 1.0),
        ("Ünïcödé ß", "ünïcödé ss", 1 / 3),
    ],
)
def test_text_similarity(a: str, b: str, expected: float) -> None:
    assert text_similarity(a, b) == expected
    assert text_similarity(b, a) == expected
    assert jaccard(token_set(a), token_set(b)) == expected


def test_token_set_splits_on_any_whitespace() -> None:
    assert token_set("A\tb\nC\u00a0d  e") == frozenset({"a", "b", "c", "d", "e"})
