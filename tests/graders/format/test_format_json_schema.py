"""JSON Schema validation (the jsonschema library, patterns in RE2): $ref, errors, grader behaviour."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openjudge.graders.base_grader import GraderError, GraderScore
from openjudge.graders.format import JsonSchemaGrader, SchemaError
from openjudge.graders.format._schema_validator import JsonSchema

pytestmark = pytest.mark.anyio


PERSON: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 5},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": True, "maxItems": 2},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("instance", "errors"),
    [
        ({"name": "Ann", "age": 3}, []),
        ({"name": "Ann", "age": 3.0}, []),
        ({"name": "Ann"}, ["$: 'age' is a required property"]),
        (
            {"name": "", "age": -1},
            ["$.name: '' should be non-empty", "$.age: -1 is less than the minimum of 0"],
        ),
        ({"name": "Ann", "age": True}, ["$.age: True is not of type 'integer'"]),
        ({"name": "Ann", "age": 1.5}, ["$.age: 1.5 is not of type 'integer'"]),
        ({"name": "北京欢迎你", "age": 1}, []),  # lengths in code points
        ({"name": "北京欢迎你们", "age": 1}, ["$.name: '北京欢迎你们' is too long"]),
        (
            {"name": "Ann", "age": 1, "x": 0},
            ["$: Additional properties are not allowed ('x' was unexpected)"],
        ),
        ({"name": "Ann", "age": 1, "tags": ["a", "a"]}, ["$.tags: ['a', 'a'] has non-unique elements"]),
        ({"name": "Ann", "age": 1, "tags": ["c"]}, ["$.tags[0]: 'c' is not one of ['a', 'b']"]),
        ([], ["$: [] is not of type 'object'"]),
    ],
)
def test_person_schema(instance: Any, errors: list[str]) -> None:
    assert JsonSchema(PERSON).errors(instance) == errors


def test_refs_and_recursion() -> None:
    schema: dict[str, Any] = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "value": {"type": "number"},
                    "next": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/node"}]},
                },
                "required": ["value"],
            }
        },
        "$ref": "#/$defs/node",
    }
    validator = JsonSchema(schema)
    assert validator.is_valid({"value": 1, "next": {"value": 2, "next": None}})
    assert not validator.is_valid({"value": 1, "next": {"next": None}})
    legacy = JsonSchema({"definitions": {"n": {"type": "integer"}}, "items": {"$ref": "#/definitions/n"}})
    assert legacy.errors([1, "x"]) == ["$[1]: 'x' is not of type 'integer'"]


def test_combinators() -> None:
    one_of = JsonSchema({"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 10}]})
    assert one_of.is_valid(3)
    assert one_of.is_valid(10.5)
    assert one_of.errors(12) == [
        "$: 12 is valid under each of {'type': 'number', 'minimum': 10}, {'type': 'integer'}"
    ]
    all_of = JsonSchema({"allOf": [{"type": "string"}, {"pattern": "^a"}]})
    assert all_of.errors("ba") == ["$: 'ba' does not match '^a'"]
    conditional = JsonSchema(
        {"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"type": "integer"}}
    )
    assert conditional.is_valid("ab") and conditional.is_valid(3)
    assert conditional.errors("a") == ["$: 'a' is too short"]
    assert conditional.errors(1.5) == ["$: 1.5 is not of type 'integer'"]
    not_schema = JsonSchema({"not": {"const": {"a": [1, 2]}}})
    assert not not_schema.is_valid({"a": [1, 2.0]})
    assert not_schema.is_valid({"a": [2, 1]})


def test_numbers_and_arrays() -> None:
    number = JsonSchema({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "multipleOf": 0.1})
    assert number.is_valid(0.3)  # decimal arithmetic: 0.3 is a multiple of 0.1
    assert number.errors(0) == ["$: 0 is less than or equal to the minimum of 0"]
    assert number.errors(0.25) == ["$: 0.25 is not a multiple of 0.1"]
    tuple_schema = JsonSchema({"prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False})
    assert tuple_schema.is_valid([1, "a"])
    assert tuple_schema.errors([1, "a", None]) == ["$: Expected at most 2 items but found 1 extra: None"]
    contains = JsonSchema({"type": "array", "contains": {"type": "string"}, "minItems": 1})
    assert contains.errors([1, 2]) == ["$: [1, 2] does not contain items matching the given schema"]


def test_object_keywords() -> None:
    schema = JsonSchema(
        {
            "type": "object",
            "patternProperties": {"^n_": {"type": "number"}},
            "additionalProperties": {"type": "string"},
            "propertyNames": {"maxLength": 4},
            "minProperties": 1,
        }
    )
    assert schema.is_valid({"n_1": 3, "s": "x"})
    assert schema.errors({"n_1": "x"}) == ["$.n_1: 'x' is not of type 'number'"]
    assert schema.errors({"s": 1}) == ["$.s: 1 is not of type 'string'"]
    assert schema.errors({"long_key": "x"}) == ["$: 'long_key' is too long"]
    assert schema.errors({}) == ["$: {} should be non-empty"]
    closed = JsonSchema({"patternProperties": {"^n_": True}, "additionalProperties": False})
    assert closed.is_valid({"n_1": 1})
    assert closed.errors({"n_1": 1, "b": 2, "a": 3}) == [
        "$: Additional properties are not allowed ('a', 'b' were unexpected)"
    ]


def test_boolean_schemas_and_annotations() -> None:
    assert JsonSchema(True).is_valid({"anything": [1]})
    assert JsonSchema(False).errors(1) == ["$: False schema does not allow 1"]
    annotated = JsonSchema(
        {"title": "T", "description": "d", "format": "email", "x-custom": 1, "type": "string"}
    )
    assert annotated.is_valid("not-an-email")


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        ({"type": "text"}, "$.type: 'text' is not valid"),
        ({"$ref": "#/$defs/missing"}, "'#/$defs/missing' does not resolve"),
        ({"$ref": "other.json#/a"}, "only references inside the schema are followed"),
        ({"$ref": "https://example.com/s.json"}, "only references inside the schema are followed"),
        ({"$ref": "#anchor"}, "does not resolve"),
        ({"pattern": "("}, "$.pattern: '(' is not a 'regex'"),
        ({"minLength": -1}, "$.minLength"),
        ({"required": "a"}, "$.required"),
        ({"properties": {"a": 3}}, "$.properties.a"),
        ({"anyOf": []}, "$.anyOf"),
        ({"exclusiveMinimum": True}, "$.exclusiveMinimum"),
        ({"multipleOf": 0}, "$.multipleOf"),
        ("not a schema", "must be an object or a boolean"),
    ],
)
def test_schema_errors(schema: Any, fragment: str) -> None:
    with pytest.raises(SchemaError, match=re.escape(fragment)):
        JsonSchema(schema)


def test_error_limit() -> None:
    schema = JsonSchema({"type": "array", "items": {"type": "string"}})
    assert len(schema.errors(list(range(100)))) == 20
    assert len(schema.errors(list(range(100)), limit=3)) == 3


async def test_grader_with_constructor_schema() -> None:
    grader = JsonSchemaGrader(PERSON)
    good = await grader.aevaluate(response='```json\n{"name": "Ann", "age": 30}\n```')
    assert isinstance(good, GraderScore)
    assert good.score == 1.0
    assert good.metadata["errors"] == []
    bad = await grader.aevaluate(response='{"name": "Ann", "age": "30"}')
    assert isinstance(bad, GraderScore)
    assert bad.score == 0.0
    assert bad.reason == "schema violation: $.age: '30' is not of type 'integer'"
    broken = await grader.aevaluate(response="{")
    assert isinstance(broken, GraderScore)
    assert broken.score == 0.0
    assert broken.metadata["parsed"] is False


async def test_grader_with_per_sample_schema() -> None:
    grader = JsonSchemaGrader()
    result = await grader.aevaluate(response="[1, 2]", schema={"type": "array", "maxItems": 1})
    assert isinstance(result, GraderScore)
    assert result.score == 0.0
    missing = await grader.aevaluate(response="[]")
    assert isinstance(missing, GraderError)
    assert missing.kind == "invalid_input"
    assert "'schema'" in missing.message
    malformed = await grader.aevaluate(response="[]", schema={"type": 5})
    assert isinstance(malformed, GraderError)
    assert malformed.kind == "invalid_input"
    assert "'schema'" in malformed.message
    not_a_mapping = await grader.aevaluate(response="[]", schema=[1])  # type: ignore[arg-type]  # deliberately wrong
    assert isinstance(not_a_mapping, GraderError)
    assert "'schema'" in not_a_mapping.message


async def test_ref_cycle_without_progress_is_reported() -> None:
    result = await JsonSchemaGrader().aevaluate(response="1", schema={"$ref": "#"})
    assert isinstance(result, GraderError)
    assert result.kind == "invalid_input"
    assert "$ref cycle" in result.message


def test_bad_schema_at_construction_raises() -> None:
    with pytest.raises(SchemaError):
        JsonSchemaGrader({"dependentRequired": {"a": "b"}})


# Differential check against the reference implementation, when it is installed.
JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 12),
    st.sampled_from([0.5, 1.0, 2.5, -1.5]),
    st.sampled_from(["", "a", "ab", "n_1", "北京"]),
)
JSON_VALUES = st.recursive(
    JSON_LEAF,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.sampled_from(["name", "age", "tags", "n_1", "x", "value", "next"]), children, max_size=4
        ),
    ),
    max_leaves=12,
)
DIFF_SCHEMAS: list[dict[str, Any]] = [
    PERSON,
    {"anyOf": [{"type": "integer", "minimum": 2}, {"type": "string", "pattern": "^a"}, {"type": "null"}]},
    {
        "type": "array",
        "items": {"oneOf": [{"type": "number"}, {"type": "integer", "maximum": 3}]},
        "minItems": 1,
    },
    {
        "type": "object",
        "patternProperties": {"^n_": {"type": "number"}},
        "additionalProperties": {"type": "string"},
    },
    {"not": {"enum": [1, "a", None, [1], {"x": 1}]}},
    {
        "$defs": {"v": {"type": ["integer", "string"]}},
        "type": "object",
        "properties": {"value": {"$ref": "#/$defs/v"}},
    },
]


@settings(max_examples=100, deadline=None)
@given(instance=JSON_VALUES)
def test_agrees_with_jsonschema_package(instance: Any) -> None:
    reference = pytest.importorskip("jsonschema")
    for schema in DIFF_SCHEMAS:
        expected = reference.Draft202012Validator(schema).is_valid(instance)
        assert JsonSchema(schema).is_valid(instance) == expected, (schema, instance)


async def test_hostile_patterns_are_bounded() -> None:
    # An attack found by adversarial testing: 34 "a" and "!" against ^(a+)+$ ignored timeout_s and SIGTERM.
    grader = JsonSchemaGrader(
        {"type": "object", "properties": {"k": {"type": "string", "pattern": "^(a+)+$"}}}
    )
    start = time.monotonic()
    result = await grader.aevaluate(response='{"k": "' + "a" * 34 + '!"}')
    assert time.monotonic() - start < 2.0
    assert isinstance(result, GraderScore) and result.score == 0.0
    assert result.metadata["errors"] == ["$.k: '" + "a" * 34 + "!' does not match '^(a+)+$'"]
    keys = JsonSchemaGrader({"type": "object", "patternProperties": {"^(a+)+$": False}})
    assert isinstance(matched := await keys.aevaluate(response='{"aaa": 1, "b": 2}'), GraderScore)
    assert matched.score == 0.0


async def test_backtracking_patterns_validate_in_a_killable_worker() -> None:
    schema = {"type": "string", "pattern": r"^(a+)+(?<=a)$"}
    grader = JsonSchemaGrader(schema, timeout_s=1.0)
    assert grader.schema is not None and grader.schema.backtracking
    good = await grader.aevaluate(response='"aaa"')
    assert isinstance(good, GraderScore) and good.score == 1.0
    start = time.monotonic()
    hostile = await grader.aevaluate(response='"' + "a" * 40 + '!"')
    assert time.monotonic() - start < 1.0 + 2.0
    # The response made the check run away: its failure, scored at the bottom, not an error.
    assert isinstance(hostile, GraderScore) and hostile.score == 0.0
    assert hostile.metadata["blame"] == "response" and hostile.metadata["cause"] == "timeout"
    grader.workers.close()
