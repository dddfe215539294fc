"""JSON Schema validation for the ``json_schema`` grader: the ``jsonschema`` library, with
every pattern matched against response text in linear time.

``jsonschema`` implements every draft (2020-12 unless the schema's ``$schema`` names
another), ``$ref`` into the same document included; a remote ``$ref`` is never fetched.
What this module adds is the one thing a policy could abuse: the library matches
``pattern``, ``patternProperties`` and the pattern part of ``additionalProperties`` with
Python's backtracking ``re``, so a response could make a pattern such as ``^(a+)+$`` run
for hours. Those three keywords are replaced by RE2 versions (linear in the text; see
:mod:`openjudge.graders._safe_regex`). A schema that needs a pattern RE2 cannot run
(look-around, back-references), or that combines ``patternProperties`` with
``unevaluatedProperties`` (which matches keys with ``re`` inside the library), has
:attr:`JsonSchema.backtracking` set, and the grader validates it in a worker process
it kills after its time limit.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, cast

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError as _LibrarySchemaError
from jsonschema.exceptions import ValidationError
from pydantic import JsonValue
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from openjudge.errors import SchemaError
from openjudge.graders._safe_regex import SafeRegex

__all__ = ["JsonSchema", "SchemaError", "validate_in_worker"]

_PATTERN_KEYWORDS = ("pattern", "patternProperties")


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> SafeRegex:
    return SafeRegex(pattern)


def _linear_search(pattern: str, text: str) -> bool:
    return _regex(pattern).matches(text, "search")


def _pattern(validator: Any, pattern: str, instance: object, schema: object) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _linear_search(pattern, str(instance)):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, object], instance: object, schema: object
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    assert isinstance(instance, Mapping)
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _linear_search(pattern, str(key)):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: object, instance: object, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    assert isinstance(instance, Mapping)
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [
        key
        for key in instance
        if key not in properties and not any(_linear_search(p, str(key)) for p in patterns)
    ]
    if validator.is_type(additional, "object"):
        for key in extras:
            yield from validator.descend(instance[key], additional, path=key)
    elif additional is False and extras:
        names = ", ".join(repr(key) for key in sorted(extras, key=str))
        verb = "was" if len(extras) == 1 else "were"
        yield ValidationError(f"Additional properties are not allowed ({names} {verb} unexpected)")


_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


def _multiple_of(validator: Any, step: float, instance: object, schema: object) -> Iterator[ValidationError]:
    # The library divides floats (0.3 / 0.1 = 2.9999999999999996, so 0.3 "is not a multiple
    # of 0.1"); decimal arithmetic on the numbers as written agrees with the reader.
    if not validator.is_type(instance, "number"):
        return
    assert isinstance(instance, int | float)
    try:
        multiple = Decimal(repr(instance)) % Decimal(repr(step)) == 0
    except InvalidOperation:  # too many digits for a decimal quotient: fall back to floats
        quotient = instance / step
        multiple = quotient == int(quotient)
    if not multiple:
        yield ValidationError(f"{instance!r} is not a multiple of {step!r}")


_extend: Callable[..., Any] = validators.extend  # untyped in jsonschema's stubs


@functools.cache
def _validator_class(base: type[Any], *, linear: bool) -> Any:
    """``base`` (one draft's validator) with multipleOf in decimals, and, when ``linear``,
    every pattern matched by RE2 (one class per draft, built once)."""
    keywords: dict[str, Callable[..., Iterator[ValidationError]]] = {"multipleOf": _multiple_of}
    if linear:
        keywords |= {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
        }
    return _extend(base, keywords)


def _walk(schema: object) -> Iterator[Mapping[str, object]]:
    """Every subschema in a schema document (the values of data keywords such as ``const``
    are instances, not schemas, and are skipped)."""
    if isinstance(schema, Mapping):
        yield schema
        for key, value in schema.items():
            if key not in _DATA_KEYWORDS:
                yield from _walk(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _walk(value)


def _patterns_of(schema: object) -> tuple[set[str], bool]:
    """The patterns a schema matches against instances, and whether it mixes
    ``patternProperties`` with ``unevaluatedProperties``."""
    patterns: set[str] = set()
    pattern_properties = unevaluated = False
    for node in _walk(schema):
        if isinstance(node.get("pattern"), str):
            patterns.add(str(node["pattern"]))
        by_pattern = node.get("patternProperties")
        if isinstance(by_pattern, Mapping):
            pattern_properties = True
            patterns.update(str(p) for p in by_pattern)
        unevaluated = unevaluated or "unevaluatedProperties" in node
    return patterns, pattern_properties and unevaluated


def _check_refs(schema: Mapping[str, JsonValue] | bool) -> None:
    """Every ``$ref`` resolves inside the document (nothing is ever fetched)."""
    refs = [node["$ref"] for node in _walk(schema) if "$ref" in node]
    if not refs:
        return
    resource = Resource.from_contents(schema, default_specification=DRAFT202012)
    resolver = Registry().resolver_with_root(resource)
    for ref in refs:
        if not isinstance(ref, str):
            raise SchemaError(f"$ref must be a string, got {ref!r}")
        try:
            resolver.lookup(ref)
        except Unresolvable:
            raise SchemaError(
                f"$ref {ref!r} does not resolve: only references inside the schema are followed"
            ) from None


class JsonSchema:
    """A checked schema that validates parsed JSON values.

    Args:
        schema: A JSON Schema as a mapping (or a boolean schema).
        allow_backtracking: Match patterns RE2 cannot run with ``re`` in this thread
            (no time limit: for worker processes only).

    Raises:
        SchemaError: The schema is not valid under its draft's meta-schema, or a
            pattern is not a valid regular expression.

    Example:
        >>> schema = JsonSchema({"type": "object", "required": ["a"]})
        >>> schema.errors({"b": 1})
        ["$: 'a' is a required property"]
    """

    def __init__(self, schema: Mapping[str, JsonValue] | bool, *, allow_backtracking: bool = False) -> None:
        if not isinstance(schema, Mapping | bool):
            raise SchemaError(f"a schema must be an object or a boolean, got {type(schema).__name__}")
        self._schema = schema
        base = validators.validator_for(schema, default=Draft202012Validator)
        try:
            base.check_schema(cast(Any, schema))
        except _LibrarySchemaError as exc:
            where = exc.json_path if exc.path else "$"
            raise SchemaError(f"{where}: {exc.message}") from None
        _check_refs(schema)
        patterns, mixes_unevaluated = _patterns_of(schema)
        try:
            compiled = [_regex(p) for p in patterns]
        except Exception as exc:  # re.error, or RE2's own error types
            raise SchemaError(f"a pattern is not a valid regular expression: {exc}") from None
        self._backtracking = mixes_unevaluated or any(not p.linear for p in compiled)
        self._allow_backtracking = allow_backtracking
        linear = not (self._backtracking and allow_backtracking)
        self._validator = _validator_class(base, linear=linear)(schema)

    @property
    def schema(self) -> Mapping[str, JsonValue] | bool:
        """The schema as given."""
        return self._schema

    @property
    def backtracking(self) -> bool:
        """Whether validation needs backtracking (``re``): validate such schemas in a worker process."""
        return self._backtracking

    def errors(self, instance: JsonValue, *, limit: int = 20) -> list[str]:
        """Up to ``limit`` messages, each ``"<JSON path>: <what is wrong>"``.

        Raises:
            ValueError: The schema needs backtracking and this object was not built with
                ``allow_backtracking`` (validate with :func:`validate_in_worker`).
        """
        if self._backtracking and not self._allow_backtracking:
            raise ValueError("this schema needs backtracking patterns: validate it with validate_in_worker")
        found: list[str] = []
        try:
            for error in self._validator.iter_errors(instance):
                found.append(f"{error.json_path}: {error.message}")
                if len(found) >= limit:
                    break
        except RecursionError:
            if _depth(instance) < _SHALLOW:
                raise SchemaError(
                    "$ref cycle: the schema refers back to itself without descending into the value"
                ) from None
            return ["$: the document is nested too deeply to validate"]
        return found

    def is_valid(self, instance: JsonValue) -> bool:
        return not self.errors(instance, limit=1)


_SHALLOW = 100


def _depth(value: object) -> int:
    """Nesting depth of a JSON value, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(node, Mapping):
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            stack.extend((child, depth + 1) for child in node)
    return deepest


def validate_in_worker(schema: JsonValue, instance: JsonValue, limit: int) -> list[str]:
    """:meth:`JsonSchema.errors` with backtracking patterns allowed, for a :class:`~openjudge.graders._workers.WorkerPool`."""
    if not isinstance(schema, Mapping | bool):
        raise SchemaError("the schema must be an object or a boolean")
    return JsonSchema(schema, allow_backtracking=True).errors(instance, limit=limit)
