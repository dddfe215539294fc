"""A compact JSON Schema validator for the keywords structured-output schemas use.

Supported (draft 2020-12 semantics, which agree with drafts 6-2019 on these):

* any: ``type`` (name or list), ``enum``, ``const``, ``allOf``, ``anyOf``, ``oneOf``,
  ``not``, ``$ref`` to a JSON pointer in the same document (``#``, ``#/$defs/x``,
  ``#/definitions/x``, ...), boolean schemas ``true`` / ``false``;
* numbers: ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``
  (numeric form), ``multipleOf``;
* strings: ``minLength``, ``maxLength`` (in code points), ``pattern`` (a search with
  RE2, linear in the text; see :mod:`openjudge.graders.safe_regex`; a pattern RE2
  cannot run makes :attr:`JsonSchema.backtracking` true, and the grader then validates
  in a worker process it can kill);
* arrays: ``items`` (a schema; or, draft-4 style, a list meaning ``prefixItems``),
  ``prefixItems``, ``minItems``, ``maxItems``, ``uniqueItems``, ``contains``;
* objects: ``properties``, ``required``, ``additionalProperties``,
  ``patternProperties``, ``minProperties``, ``maxProperties``, ``propertyNames``.

Annotations (``title``, ``description``, ``default``, ``examples``, ``format``,
``$schema``, ``$id``, ``$comment``, ...) are accepted and ignored; ``format`` is an
annotation by default in 2020-12. Unknown keywords are ignored, as the specification
says. Keywords that change validation but are not implemented here (``if``/``then``/
``else``, ``dependentRequired``, ``unevaluatedProperties``, remote ``$ref`` ...) are
rejected with :class:`SchemaError` when the schema is loaded, so a schema is never
silently validated more loosely than written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from urllib.parse import unquote

from pydantic import JsonValue

from openjudge.graders.format._json_text import canonical_json, json_type_name
from openjudge.graders.safe_regex import SafeRegex, backtracking_match

__all__ = ["JsonSchema", "SchemaError", "validate_in_worker"]

_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_UNSUPPORTED = frozenset(
    {
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "dependencies",
        "unevaluatedProperties",
        "unevaluatedItems",
        "additionalItems",
        "minContains",
        "maxContains",
        "$dynamicRef",
        "$recursiveRef",
    }
)
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_VALUES = ("not", "additionalProperties", "contains", "propertyNames")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
_NUMBERS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_MAX_REF_HOPS = 64


class SchemaError(ValueError):
    """The schema itself is malformed or uses an unsupported keyword."""


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _has_type(instance: object, name: str) -> bool:
    kind = json_type_name(instance)
    return kind == name or (name == "number" and kind == "integer")


_BOUNDS = (("minimum", ">="), ("maximum", "<="), ("exclusiveMinimum", ">"), ("exclusiveMaximum", "<"))


def _compare(value: int | float, op: str, bound: int | float) -> bool:
    if op == ">=":
        return value >= bound
    if op == "<=":
        return value <= bound
    return value > bound if op == ">" else value < bound


def _multiple_of(value: int | float, step: int | float) -> bool:
    if isinstance(value, int) and isinstance(step, int):
        return value % step == 0
    try:
        return Decimal(repr(value)) % Decimal(repr(step)) == 0
    except InvalidOperation:
        quotient = value / step
        return quotient == int(quotient)


class JsonSchema:
    """A checked schema that validates parsed JSON values.

    Args:
        schema: A JSON Schema as a mapping (or a boolean schema).
        allow_backtracking: Match patterns RE2 cannot run with ``re`` in this thread
            (no time limit: for worker processes only).

    Raises:
        SchemaError: The schema is malformed, has a dangling ``$ref``, or uses an
            unsupported validation keyword.

    Example:
        >>> schema = JsonSchema({"type": "object", "required": ["a"]})
        >>> schema.errors({"b": 1})
        ["$: missing required property 'a'"]
    """

    def __init__(self, schema: Mapping[str, JsonValue] | bool, *, allow_backtracking: bool = False) -> None:
        self._root: object = schema
        self._patterns: dict[str, SafeRegex] = {}
        self._allow_backtracking = allow_backtracking
        self._check(schema, "#")

    @property
    def schema(self) -> Mapping[str, JsonValue] | bool:
        """The schema as given."""
        return self._root  # type: ignore[return-value]  # checked by _check at construction

    @property
    def backtracking(self) -> bool:
        """Whether a pattern needs backtracking (``re``): validate such schemas in a worker process."""
        return any(not p.linear for p in self._patterns.values())

    # ----------------------------------------------------------------- loading

    def _check(self, schema: object, where: str) -> None:
        if isinstance(schema, bool):
            return
        if not isinstance(schema, Mapping):
            raise SchemaError(
                f"{where}: a schema must be an object or a boolean, got {type(schema).__name__}"
            )
        for key in schema:
            if key in _UNSUPPORTED:
                raise SchemaError(f"{where}: keyword {key!r} is not supported by this validator")
        self._check_keywords(schema, where)
        for key in _SCHEMA_VALUES:
            if key in schema:
                self._check(schema[key], f"{where}/{key}")
        for key in _SCHEMA_LISTS:
            if key in schema:
                subs = schema[key]
                if not isinstance(subs, list) or not subs:
                    raise SchemaError(f"{where}/{key}: must be a non-empty array of schemas")
                for i, sub in enumerate(subs):
                    self._check(sub, f"{where}/{key}/{i}")
        for key in _SCHEMA_MAPS:
            if key in schema:
                subs = schema[key]
                if not isinstance(subs, Mapping):
                    raise SchemaError(f"{where}/{key}: must be an object of schemas")
                for name, sub in subs.items():
                    if key == "patternProperties":
                        self._pattern(name, f"{where}/{key}")
                    self._check(sub, f"{where}/{key}/{name}")
        if "items" in schema:
            items = schema["items"]
            if isinstance(items, list):
                for i, sub in enumerate(items):
                    self._check(sub, f"{where}/items/{i}")
            else:
                self._check(items, f"{where}/items")
        if "$ref" in schema:
            ref = schema["$ref"]
            if not isinstance(ref, str):
                raise SchemaError(f"{where}/$ref: must be a string")
            self._resolve(ref, where)

    def _check_keywords(self, schema: Mapping[str, object], where: str) -> None:
        if "type" in schema:
            kinds = schema["type"]
            names = kinds if isinstance(kinds, list) else [kinds]
            if not names or any(not isinstance(n, str) or n not in _TYPES for n in names):
                raise SchemaError(f"{where}/type: must be one of {sorted(_TYPES)} or a list of them")
        for key in _COUNTS:
            if key in schema and not _is_count(schema[key]):
                raise SchemaError(f"{where}/{key}: must be a non-negative integer")
        for key in _NUMBERS:
            if key in schema and not _is_number(schema[key]):
                raise SchemaError(f"{where}/{key}: must be a number")
        step = schema.get("multipleOf")
        if step is not None and not (_is_number(step) and isinstance(step, int | float) and step > 0):
            raise SchemaError(f"{where}/multipleOf: must be a number > 0")
        if "enum" in schema and not isinstance(schema["enum"], list):
            raise SchemaError(f"{where}/enum: must be an array")
        if "required" in schema:
            required = schema["required"]
            if not isinstance(required, list) or any(not isinstance(r, str) for r in required):
                raise SchemaError(f"{where}/required: must be an array of strings")
        if "uniqueItems" in schema and not isinstance(schema["uniqueItems"], bool):
            raise SchemaError(f"{where}/uniqueItems: must be a boolean")
        if "pattern" in schema:
            pattern = schema["pattern"]
            if not isinstance(pattern, str):
                raise SchemaError(f"{where}/pattern: must be a string")
            self._pattern(pattern, f"{where}/pattern")

    def _pattern(self, pattern: str, where: str) -> SafeRegex:
        compiled = self._patterns.get(pattern)
        if compiled is None:
            try:
                compiled = SafeRegex(pattern)
            except (re.error, RecursionError, OverflowError) as exc:
                raise SchemaError(f"{where}: invalid regular expression {pattern!r}: {exc}") from exc
            self._patterns[pattern] = compiled
        return compiled

    def _search(self, pattern: str, text: str, where: str) -> bool:
        compiled = self._pattern(pattern, where)
        if compiled.linear:
            return compiled.matches(text)
        if not self._allow_backtracking:
            raise RuntimeError(
                "a backtracking pattern must be matched in a worker process (see backtracking)"
            )
        return backtracking_match(pattern, False, text, "search")

    def _resolve(self, ref: str, where: str) -> object:
        if not ref.startswith("#"):
            raise SchemaError(f"{where}/$ref: only references inside the schema ('#/...') are supported")
        target = self._root
        pointer = unquote(ref[1:])
        if pointer and not pointer.startswith("/"):
            raise SchemaError(f"{where}/$ref: anchors ({ref!r}) are not supported; use a JSON pointer")
        for raw in pointer.split("/")[1:] if pointer else []:
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(target, Mapping) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                raise SchemaError(f"{where}/$ref: {ref!r} does not resolve")
        if not isinstance(target, Mapping | bool):
            raise SchemaError(f"{where}/$ref: {ref!r} does not point to a schema")
        return target

    # -------------------------------------------------------------- validation

    def errors(self, instance: JsonValue, *, limit: int = 20) -> list[str]:
        """Up to ``limit`` validation errors, each ``"<path>: <message>"``; empty if valid."""
        out: list[str] = []
        self._validate(instance, self._root, "$", out, limit, 0)
        return out

    def is_valid(self, instance: JsonValue) -> bool:
        """Whether ``instance`` satisfies the schema."""
        return not self.errors(instance, limit=1)

    def _passes(self, instance: object, schema: object, path: str, hops: int) -> bool:
        probe: list[str] = []
        self._validate(instance, schema, path, probe, 1, hops)
        return not probe

    def _validate(
        self, instance: object, schema: object, path: str, out: list[str], limit: int, hops: int
    ) -> None:
        if len(out) >= limit:
            return
        if schema is True:
            return
        if schema is False or not isinstance(schema, Mapping):
            out.append(f"{path}: no value is allowed here")
            return
        if "$ref" in schema:
            if hops >= _MAX_REF_HOPS:
                raise SchemaError(f"$ref cycle that never descends into the instance (at {path})")
            self._validate(instance, self._resolve(str(schema["$ref"]), "#"), path, out, limit, hops + 1)
        self._validate_any(instance, schema, path, out, limit, hops)
        if isinstance(instance, int | float) and not isinstance(instance, bool):
            self._validate_number(instance, schema, path, out)
        elif isinstance(instance, str):
            self._validate_string(instance, schema, path, out)
        elif isinstance(instance, list | tuple):
            self._validate_array(list(instance), schema, path, out, limit)
        elif isinstance(instance, Mapping):
            self._validate_object(instance, schema, path, out, limit)
        del out[limit:]

    def _validate_any(
        self, instance: object, schema: Mapping[str, object], path: str, out: list[str], limit: int, hops: int
    ) -> None:
        if "type" in schema:
            kinds = schema["type"]
            names = kinds if isinstance(kinds, list) else [kinds]
            if not any(_has_type(instance, str(n)) for n in names):
                expected = " or ".join(str(n) for n in names)
                out.append(f"{path}: expected {expected}, got {json_type_name(instance)}")
        if "const" in schema and canonical_json(instance) != canonical_json(schema["const"]):
            out.append(f"{path}: must equal {canonical_json(schema['const'])[:80]}")
        enum = schema.get("enum")
        if isinstance(enum, list) and canonical_json(instance) not in {canonical_json(v) for v in enum}:
            out.append(f"{path}: must be one of {canonical_json(enum)[:80]}")
        all_of = schema.get("allOf")
        if isinstance(all_of, list):
            for sub in all_of:
                self._validate(instance, sub, path, out, limit, hops)
        any_of = schema.get("anyOf")
        if isinstance(any_of, list) and not any(self._passes(instance, s, path, hops) for s in any_of):
            out.append(f"{path}: does not match any schema in anyOf")
        one_of = schema.get("oneOf")
        if isinstance(one_of, list):
            count = sum(self._passes(instance, s, path, hops) for s in one_of)
            if count != 1:
                out.append(f"{path}: matches {count} schemas in oneOf, exactly one required")
        if "not" in schema and self._passes(instance, schema["not"], path, hops):
            out.append(f"{path}: must not match the 'not' schema")

    def _validate_number(
        self, value: int | float, schema: Mapping[str, object], path: str, out: list[str]
    ) -> None:
        for key, op in _BOUNDS:
            bound = schema.get(key)
            if isinstance(bound, int | float) and not _compare(value, op, bound):
                out.append(f"{path}: {value} is not {op} {bound}")
        step = schema.get("multipleOf")
        if isinstance(step, int | float) and not _multiple_of(value, step):
            out.append(f"{path}: {value} is not a multiple of {step}")

    def _validate_string(self, value: str, schema: Mapping[str, object], path: str, out: list[str]) -> None:
        low, high = schema.get("minLength"), schema.get("maxLength")
        if isinstance(low, int) and len(value) < low:
            out.append(f"{path}: shorter than {low} characters")
        if isinstance(high, int) and len(value) > high:
            out.append(f"{path}: longer than {high} characters")
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and not self._search(pattern, value, path):
            out.append(f"{path}: does not match pattern {pattern!r}")

    def _validate_array(
        self, items: list[object], schema: Mapping[str, object], path: str, out: list[str], limit: int
    ) -> None:
        low, high = schema.get("minItems"), schema.get("maxItems")
        if isinstance(low, int) and len(items) < low:
            out.append(f"{path}: fewer than {low} items")
        if isinstance(high, int) and len(items) > high:
            out.append(f"{path}: more than {high} items")
        if schema.get("uniqueItems") is True:
            canon = [canonical_json(v) for v in items]
            if len(set(canon)) != len(canon):
                out.append(f"{path}: items are not unique")
        prefix = schema.get("prefixItems")
        rest = schema.get("items")
        if isinstance(rest, list):  # draft-4 style tuple validation
            prefix, rest = rest, None
        prefix_list = prefix if isinstance(prefix, list) else []
        for i, item in enumerate(items):
            sub = prefix_list[i] if i < len(prefix_list) else rest
            if sub is not None:
                self._validate(item, sub, f"{path}[{i}]", out, limit, 0)
        if "contains" in schema and not any(
            self._passes(item, schema["contains"], f"{path}[{i}]", 0) for i, item in enumerate(items)
        ):
            out.append(f"{path}: no item matches the 'contains' schema")

    def _validate_object(
        self,
        obj: Mapping[object, object],
        schema: Mapping[str, object],
        path: str,
        out: list[str],
        limit: int,
    ) -> None:
        low, high = schema.get("minProperties"), schema.get("maxProperties")
        if isinstance(low, int) and len(obj) < low:
            out.append(f"{path}: fewer than {low} properties")
        if isinstance(high, int) and len(obj) > high:
            out.append(f"{path}: more than {high} properties")
        required = schema.get("required")
        for name in required if isinstance(required, list) else ():
            if name not in obj:
                out.append(f"{path}: missing required property {name!r}")
        properties = schema.get("properties")
        props = properties if isinstance(properties, Mapping) else {}
        pattern_props = schema.get("patternProperties")
        patterns = pattern_props if isinstance(pattern_props, Mapping) else {}
        additional = schema.get("additionalProperties", True)
        names = schema.get("propertyNames")
        for key, value in obj.items():
            key_str = str(key)
            child = f"{path}.{key_str}"
            if names is not None:
                self._validate(key_str, names, child, out, limit, 0)
            matched = key_str in props
            if matched:
                self._validate(value, props[key_str], child, out, limit, 0)
            for pattern, sub in patterns.items():
                if self._search(str(pattern), key_str, path):
                    matched = True
                    self._validate(value, sub, child, out, limit, 0)
            if not matched:
                if additional is False:
                    out.append(f"{path}: unexpected property {key_str!r}")
                elif additional is not True:
                    self._validate(value, additional, child, out, limit, 0)


def validate_in_worker(schema: JsonValue, instance: JsonValue, limit: int) -> list[str]:
    """:meth:`JsonSchema.errors` with backtracking patterns allowed, for a :class:`~openjudge.graders.workers.WorkerPool`."""
    if not isinstance(schema, Mapping | bool):
        raise SchemaError("the schema must be an object or a boolean")
    try:
        return JsonSchema(schema, allow_backtracking=True).errors(instance, limit=limit)
    except RecursionError:
        return ["$: the document is nested too deeply to validate"]
