"""``{{ namespace.path }}`` templates and the ``sample`` namespace built from a response."""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from openjudge.graders.openai._sample import build_sample, parse_json_output
from openjudge.graders.openai._templates import Template, VariableError, parse_reference

SAMPLE = build_sample(
    '{"answer": "Paris", "steps": [1, 2.5, true, null]}',
    [{"id": "c1", "function": {"name": "lookup", "arguments": {"city": "Paris"}}}],
)


def test_references_walk_keys_and_indexes_with_or_without_spaces() -> None:
    item: dict[str, JsonValue] = {"reference_answer": "Paris", "meta": {"tags": ["geo", "fr"]}}
    t = Template("{{ item.reference_answer }}/{{item.meta.tags[1]}}/{{ sample.output_json.answer }}")
    assert t.render(item, SAMPLE) == "Paris/fr/Paris"
    assert Template("{{ sample.output_tools[0].function.name }}").render({}, SAMPLE) == "lookup"
    assert Template("{{ item['odd key'] }}").render({"odd key": 1}, SAMPLE) == "1"


def test_non_strings_render_as_compact_json() -> None:
    assert Template("{{ sample.output_json.steps }}").render({}, SAMPLE) == "[1,2.5,true,null]"
    assert Template("{{ item.x }}").render({"x": {"a": [1, "é"]}}, SAMPLE) == '{"a":[1,"é"]}'
    # Chat Completions sends tool arguments as a JSON string; an object from a dataset becomes one.
    assert (
        Template("{{ sample.output_tools[0].function.arguments }}").render({}, SAMPLE) == '{"city": "Paris"}'
    )


def test_values_are_inserted_once_never_reparsed() -> None:
    sample = build_sample("{{ item.secret }}")
    assert (
        Template("say {{ sample.output_text }}").render({"secret": "leak"}, sample) == "say {{ item.secret }}"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{{ foo.bar }}", "starts with 'item.' or 'sample.'"),
        ("{{ item }}", "name a field"),
        ("{{ sample.output_audio }}", "output_audio is not supported"),
        ("{{ sample.answer }}", "sample has choices, output_json, output_text, output_tools"),
        ("{{ item.a[x] }}", "cannot read the path"),
    ],
)
def test_bad_references_are_refused_when_built(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Template(text)


def test_missing_fields_name_their_namespace_and_path() -> None:
    with pytest.raises(VariableError) as missing_item:
        Template("{{ item.reference_answer }}").render({"question": "q"}, SAMPLE)
    assert missing_item.value.namespace == "item" and "item has no field 'reference_answer'" in str(
        missing_item.value
    )
    with pytest.raises(VariableError) as no_tool:
        Template("{{ sample.output_tools[1].function.name }}").render({}, SAMPLE)
    assert no_tool.value.namespace == "sample" and no_tool.value.cause == "invalid_variable_error"
    assert "sample.output_tools[1] does not exist (sample.output_tools is a list of 1)" in str(no_tool.value)


def test_output_json_of_a_response_that_is_not_json_is_a_sample_parse_error() -> None:
    with pytest.raises(VariableError) as err:
        Template("{{ sample.output_json.answer }}").render({}, build_sample("Paris"))
    assert err.value.cause == "sample_parse_error"


def test_output_json_refuses_what_json_does_not_allow_and_survives_hostile_nesting() -> None:
    assert parse_json_output('{"a": 1}') == {"a": 1}
    assert parse_json_output("NaN") is None
    assert parse_json_output('{"a": 1e999}') is None  # overflows to inf
    assert parse_json_output("[" * 100_000 + "]" * 100_000) is None  # RecursionError: not JSON
    assert parse_json_output("9" * 5000) is None  # past Python's int digit limit


def test_a_response_message_gives_text_and_tools() -> None:
    sample = build_sample(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "hi"}],
            "tool_calls": [{"function": {"name": "f"}}],
        }
    )
    assert sample["output_text"] == "hi"
    assert sample["output_tools"] == [{"function": {"name": "f"}, "type": "function"}]
    assert sample["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "hi", "tool_calls": sample["output_tools"]},
            "finish_reason": "tool_calls",
        }
    ]


def test_parse_reference_keeps_the_text() -> None:
    ref = parse_reference("sample.output_json.a[0]")
    assert (ref.namespace, ref.steps, ref.text) == (
        "sample",
        ("output_json", "a", 0),
        "sample.output_json.a[0]",
    )


def test_json_nested_past_the_response_depth_limit_is_not_json() -> None:
    assert parse_json_output("[" * 100 + "]" * 100) is not None
    deep = "[" * 101 + "]" * 101
    assert parse_json_output(deep) is None
    with pytest.raises(VariableError) as err:
        Template("{{ sample.output_json }}").render({}, build_sample(deep))
    assert err.value.cause == "sample_parse_error"
