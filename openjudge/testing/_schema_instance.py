"""A small, deterministic generator of JSON instances for JSON schemas.

It covers the subset of JSON Schema that pydantic emits for judge output models
and that OpenAI-style ``response_format`` schemas use: ``type`` (also as a list),
``properties`` (every property is emitted, required or not), ``$ref`` into
``$defs``/``definitions``, ``anyOf``/``oneOf`` (first non-null branch), ``allOf``
(object branches merged), ``enum`` (see below), ``const``, ``default`` is
ignored, numeric bounds (``minimum``/``maximum``/``exclusiveMinimum``/
``exclusiveMaximum``), string lengths and array sizes.

Choices, so that tests can predict them:

- a property named ``score`` (of type integer, number or unspecified) gets the
  caller's ``score``, verbatim or clamped into its ``minimum``/``maximum``; with a numeric
  ``enum`` and clamping, the allowed value nearest it (the smaller on a tie);
- other numeric ``enum`` values get the value nearest the middle of the enum (as bounds
  get their midpoint); any other ``enum`` its first value;
- other integers get the rounded midpoint of their bounds, numbers the exact
  midpoint; with one bound, that bound (nudged by 1 when exclusive); with none, 1;
- strings are ``"ok"``, or a short sentence for properties whose name contains
  ``reason``, ``explanation`` or ``rationale``; padded/truncated to the
  ``minLength``/``maxLength`` bounds;
- arrays have 2 items, clamped into ``[minItems, maxItems]``; from schema depth 6
  on (each property or item is one level), arrays only get ``minItems`` items,
  so recursive schemas stay small;
- booleans are ``true``; ``null`` is ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

JsonValue: TypeAlias = "dict[str, JsonValue] | list[JsonValue] | str | int | float | bool | None"

__all__ = ["JsonValue", "schema_instance"]

_REASON = "The response is acceptable."
_REASON_KEYS = ("reason", "explanation", "rationale")
_MAX_DEPTH = 32
_SMALL_DEPTH = 6


def schema_instance(schema: Mapping[str, object], *, score: int | float, clamp: bool = False) -> JsonValue:
    """Return a JSON value that validates against ``schema``.

    Args:
        schema: A JSON schema as parsed by ``json.loads`` (dicts and lists); ``$ref``
            pointers resolve against it.
        score: The value placed in every property named ``score``.
        clamp: Keep ``score`` to what each such property allows, as a server that enforces
            the schema does: clamped into its inclusive bounds, or the nearest value of its
            ``enum``. Otherwise it is used verbatim (an enum still gives its first value).

    Raises:
        ValueError: For a ``$ref`` that is not local or does not resolve.
    """
    root: dict[str, object] = schema if isinstance(schema, dict) else dict(schema)
    return _Generator(root, score, clamp).value(root, name="", depth=0)


class _Generator:
    __slots__ = ("_clamp", "_root", "_score")

    def __init__(self, root: dict[str, object], score: int | float, clamp: bool) -> None:
        self._root = root
        self._score = score
        self._clamp = clamp

    def value(self, schema: object, *, name: str, depth: int) -> JsonValue:
        if not isinstance(schema, dict) or depth > _MAX_DEPTH:
            return None
        schema = self._deref(schema)
        if "const" in schema:
            return _json(schema["const"])
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            numbers = [float(v) for v in enum if isinstance(v, int | float) and not isinstance(v, bool)]
            if numbers and len(numbers) == len(enum):
                # As for bounds: the score asked for (kept to the enum), else the middle of the scale.
                wanted = self._score if name == "score" else (min(numbers) + max(numbers)) / 2
                if name != "score" or self._clamp:
                    nearest = min(numbers, key=lambda v: (abs(v - wanted), v))
                    return int(nearest) if nearest.is_integer() else nearest
            return _json(enum[0])
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and branches:
                return self.value(_first_non_null(branches), name=name, depth=depth + 1)
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and all_of:
            return self.value(self._merge(all_of), name=name, depth=depth + 1)
        kind = _type_of(schema)
        if name == "score" and kind in ("integer", "number", None):
            return self._score_for(schema)
        if kind == "object":
            return self._object(schema, depth)
        if kind == "array":
            return self._array(schema, name, depth)
        if kind == "string":
            return _string(schema, name)
        if kind in ("integer", "number"):
            return _number(schema, integer=kind == "integer")
        if kind == "boolean":
            return True
        return None

    def _score_for(self, schema: dict[str, object]) -> int | float:
        score = self._score
        if self._clamp:
            lo, hi = schema.get("minimum"), schema.get("maximum")
            if isinstance(lo, int | float) and score < lo:
                score = lo
            if isinstance(hi, int | float) and score > hi:
                score = hi
        return score

    def _object(self, schema: dict[str, object], depth: int) -> JsonValue:
        props = schema.get("properties")
        if not isinstance(props, dict):
            return {}
        return {str(k): self.value(v, name=str(k), depth=depth + 1) for k, v in props.items()}

    def _array(self, schema: dict[str, object], name: str, depth: int) -> JsonValue:
        lo = _int(schema.get("minItems"), 0)
        hi = _int(schema.get("maxItems"), 1 << 30)
        count = max(lo, min(2 if depth < _SMALL_DEPTH else lo, hi))
        prefix = schema.get("prefixItems")
        prefix_items = prefix if isinstance(prefix, list) else []
        items = schema.get("items")
        out: list[JsonValue] = []
        for i in range(max(count, len(prefix_items))):
            item = prefix_items[i] if i < len(prefix_items) else items
            out.append(self.value(item if isinstance(item, dict) else {}, name=name, depth=depth + 1))
        return out

    def _deref(self, schema: dict[str, object]) -> dict[str, object]:
        seen = 0
        while isinstance(ref := schema.get("$ref"), str) and seen < _MAX_DEPTH:
            target = self._resolve(ref)
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **siblings} if siblings else target
            seen += 1
        return schema

    def _resolve(self, ref: str) -> dict[str, object]:
        if not ref.startswith("#"):
            raise ValueError(f"only local $ref pointers are supported, got {ref!r}")
        node: object = self._root
        for part in ref[1:].split("/"):
            if not part:
                continue
            key = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise ValueError(f"unresolvable $ref {ref!r}")
        if not isinstance(node, dict):
            raise ValueError(f"$ref {ref!r} does not point at a schema object")
        return node

    def _merge(self, branches: list[object]) -> dict[str, object]:
        merged: dict[str, object] = {}
        props: dict[str, object] = {}
        for branch in branches:
            if isinstance(branch, dict):
                part = self._deref(branch)
                merged.update(part)
                if isinstance(p := part.get("properties"), dict):
                    props.update(p)
        merged.pop("allOf", None)
        if props:
            merged["properties"] = props
        return merged


def _first_non_null(branches: list[object]) -> dict[str, object]:
    for branch in branches:
        if isinstance(branch, dict) and branch.get("type") != "null":
            return branch
    first = branches[0]
    return first if isinstance(first, dict) else {}


def _type_of(schema: dict[str, object]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if isinstance(kind, str):
        return kind
    if "properties" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return None


def _string(schema: dict[str, object], name: str) -> str:
    text = _REASON if any(k in name.lower() for k in _REASON_KEYS) else "ok"
    lo = _int(schema.get("minLength"), 0)
    hi = _int(schema.get("maxLength"), 1 << 30)
    if len(text) < lo:
        text = text + "x" * (lo - len(text))
    return text[: max(hi, 0)]


def _number(schema: dict[str, object], *, integer: bool) -> int | float:
    lo = _bound(schema, "minimum", "exclusiveMinimum", nudge=1)
    hi = _bound(schema, "maximum", "exclusiveMaximum", nudge=-1)
    if lo is not None and hi is not None:
        mid = (lo + hi) / 2
    elif lo is not None:
        mid = lo
    elif hi is not None:
        mid = hi
    else:
        mid = 1.0
    return round(mid) if integer else mid


def _bound(schema: dict[str, object], inclusive: str, exclusive: str, *, nudge: int) -> float | None:
    """The inclusive bound, or the exclusive one moved inwards by ``nudge``.

    With two exclusive bounds the nudges cancel out in the midpoint, so it stays inside.
    """
    value = schema.get(inclusive)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    value = schema.get(exclusive)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) + nudge
    return None


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _json(value: object) -> JsonValue:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, Sequence):
        return [_json(v) for v in value]
    return str(value)
