"""What each built-in grader type takes as ``params``: read from its constructor, never written twice.

A parameter's type, default, allowed values (``Literal`` members, enum values) and
description (the class docstring's ``Args:`` entry) come from the grader class itself,
so docs/grader-reference.md (:mod:`openjudge.graders.reference`) and the per-type
``params`` schema in docs/config.schema.json (:func:`openjudge.config.config_json_schema`)
follow the code. Parameters the config sets from the grader's provider (``model``,
``reward_model``) are left out; a parameter whose type is a Python object (a chat model,
a callable, a class) is marked as settable from Python only and has no schema.
"""

from __future__ import annotations

import enum
import inspect
import re
import sys
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from pydantic import BaseModel, JsonValue, TypeAdapter

from openjudge.graders._binding import JUDGE, REWARD_MODEL
from openjudge.graders._registry import GraderType

__all__ = ["PROVIDED_PARAMS", "Parameter", "SchemaDefs", "grader_parameters", "params_schema"]

PROVIDED_PARAMS = frozenset({JUDGE.parameter, REWARD_MODEL.parameter})
"""Constructor parameters a config fills from the grader's ``provider``: never in ``params``."""

SchemaDefs = dict[str, JsonValue]
"""Shared JSON Schema definitions (``$defs``) the per-type schemas refer to."""

_REF = "#/$defs/{model}"
_NULL: dict[str, JsonValue] = {"type": "null"}
_FREE_OBJECTS: tuple[dict[str, JsonValue], ...] = (
    {"type": "object"},
    {"type": "object", "additionalProperties": True},
)
_SKIPPED = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Attributes|Raises|Returns|Yields|Example|Examples|Note|Notes)\s*:\s*$"
)
_ENTRY = re.compile(r"^(\s*)([A-Za-z_]\w*)(?:\s*\([^)]*\))?\s*:\s*(.*)$")
_MODULE_PREFIX = re.compile(r"\b(?:[a-z_]\w*\.)+(?=[A-Za-z_])")


@dataclass(frozen=True, slots=True)
class Parameter:
    """One constructor parameter of a grader type, as a config's ``params`` gives it.

    Attributes:
        name: The parameter's name (the ``params`` key).
        type_text: Its annotation as written in the code.
        required: It has no default.
        default: The default as JSON (None when required or when the default is None).
        choices: The values it allows, when they are a closed set (``Literal``, an enum).
        description: The class docstring's ``Args:`` entry for it ("" when there is none).
        schema: Its JSON Schema; None when it can only be set from Python (an object).
    """

    name: str
    type_text: str
    required: bool
    default: JsonValue
    choices: tuple[JsonValue, ...]
    description: str
    schema: dict[str, JsonValue] | None

    @property
    def config_settable(self) -> bool:
        return self.schema is not None


def _owner(cls: type, name: str) -> type:
    """The class whose ``__init__`` defines ``name`` (its module resolves the annotation)."""
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        if init is not None and name in inspect.signature(init).parameters:
            return klass
    return cls


def _resolved(cls: type, parameter: inspect.Parameter) -> object:
    """The parameter's annotation as an object (postponed annotations evaluated in their module)."""
    annotation: object = parameter.annotation
    if isinstance(annotation, str):
        module = sys.modules.get(_owner(cls, parameter.name).__module__)
        try:
            annotation = eval(
                annotation, dict(vars(module)) if module is not None else {}
            )  # the code's own annotation
        except Exception:
            return inspect.Parameter.empty  # a name imported only for type checking
    return annotation


def _type_text(annotation: object, resolved: object) -> str:
    if isinstance(annotation, str):
        return annotation
    if annotation is inspect.Parameter.empty:
        return ""
    text = inspect.formatannotation(resolved)
    return _MODULE_PREFIX.sub("", text)


def _union_members(annotation: object) -> tuple[object, ...] | None:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(annotation)
    return None


def _choices(annotation: object, settable: typing.Callable[[object], bool]) -> tuple[JsonValue, ...]:
    """The closed set of values ``annotation`` allows (``None`` aside), or () when it is open.

    Union members a config cannot write (``settable`` false: a Python object) do not open it.
    """
    members = _union_members(annotation)
    if members is not None:
        kept = [m for m in members if m is not type(None) and settable(m)]
        found = [_choices(member, settable) for member in kept]
        if found and all(found):
            return tuple(value for values in found for value in values)
        return ()
    if typing.get_origin(annotation) is Literal:
        return tuple(typing.get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return tuple(member.value for member in annotation)
    return ()


def _as_json(value: object) -> JsonValue:
    """A default as JSON (enums as their value, tuples as lists, anything else as its text)."""
    if isinstance(value, enum.Enum):
        return _as_json(value.value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, tuple | list):
        return [_as_json(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _as_json(v) for k, v in value.items()}
    return str(value)


def _schema(annotation: object, defs: SchemaDefs) -> dict[str, JsonValue] | None:
    """The JSON Schema of ``annotation`` (its definitions added to ``defs``), or None for a Python object.

    Of a union, the members a config can write are kept (``"auto" | SandboxBackend``: the
    names); a union of none of them has no schema.
    """
    if annotation is inspect.Parameter.empty:
        return {}
    members = _union_members(annotation)
    if members is not None:
        parts = [part for part in (_schema(member, defs) for member in members) if part is not None]
        if any(_structured(part) for part in parts):
            # ``Mapping[str, object] | OpenAIGraderSpec``: the mapping is Python's way to pass
            # what the model describes; a config is checked against the model.
            parts = [part for part in parts if part not in _FREE_OBJECTS]
        if not parts or parts == [_NULL]:
            return None  # only None is writable: the parameter is an object
        return parts[0] if len(parts) == 1 else {"anyOf": list(parts)}
    if typing.get_origin(annotation) is type:
        return None  # a class
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(cast(Any, annotation))
        schema: dict[str, JsonValue] = adapter.json_schema(ref_template=_REF)
    except Exception:
        return None  # a Python object: a protocol, a callable
    found = schema.pop("$defs", None)
    definitions = dict(found) if isinstance(found, dict) else {}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        # A model is shared by many graders (Sampling, ScoreRange): defined once, referred to.
        definitions[annotation.__name__] = schema
        schema = {"$ref": _REF.format(model=annotation.__name__)}
    for key, definition in definitions.items():
        if key in defs and defs[key] != definition:
            raise ValueError(f"two different JSON Schema definitions are both named {key!r}")
        defs[key] = definition
    return schema


def _structured(schema: dict[str, JsonValue]) -> bool:
    """A schema of a described object: a model (``$ref``) or a discriminated union of models."""
    return "$ref" in schema or "discriminator" in schema


def _descriptions(cls: type) -> dict[str, str]:
    """``{name: text}`` from the ``Args:`` sections of ``cls``'s docstrings, its own first."""
    found: dict[str, str] = {}
    for klass in cls.__mro__:
        doc = inspect.getdoc(klass) if "__doc__" in vars(klass) else None
        for name, text in _args_section(doc or "").items():
            found.setdefault(name, text)
    return found


def _args_section(doc: str) -> dict[str, str]:
    entries: dict[str, list[str]] = {}
    in_args = False
    indent: int | None = None
    current: str | None = None
    for line in doc.splitlines():
        header = _SECTION.match(line)
        if header:
            in_args = header.group(1) in ("Args", "Arguments", "Parameters")
            indent, current = None, None
            continue
        if not in_args or not line.strip():
            continue
        entry = _ENTRY.match(line)
        width = len(line) - len(line.lstrip())
        if entry and (indent is None or width == indent):
            indent = width
            current = entry.group(2)
            entries[current] = [entry.group(3).strip()]
        elif current is not None and indent is not None and width > indent:
            entries[current].append(line.strip())
        elif indent is not None and width < indent:
            in_args = False
    return {name: " ".join(part for part in parts if part) for name, parts in entries.items()}


def grader_parameters(info: GraderType, defs: SchemaDefs | None = None) -> tuple[Parameter, ...]:
    """The ``params`` a config may give grader type ``info``, in signature order (loads the class).

    Args:
        info: The registry entry.
        defs: Where the parameters' shared schema definitions go (a throwaway dict if None).
    """
    cls = info.load()
    defs = {} if defs is None else defs
    described = _descriptions(cls)
    found: list[Parameter] = []
    for name, parameter in inspect.signature(cls).parameters.items():
        if parameter.kind in _SKIPPED or name in PROVIDED_PARAMS:
            continue
        resolved = _resolved(cls, parameter)
        required = parameter.default is inspect.Parameter.empty
        found.append(
            Parameter(
                name=name,
                type_text=_type_text(parameter.annotation, resolved),
                required=required,
                default=None if required else _as_json(parameter.default),
                choices=_choices(resolved, lambda member: _schema(member, {}) is not None),
                description=described.get(name, ""),
                schema=_schema(resolved, defs),
            )
        )
    return tuple(found)


def params_schema(info: GraderType, defs: SchemaDefs) -> dict[str, JsonValue]:
    """The JSON Schema of grader type ``info``'s ``params`` (definitions added to ``defs``)."""
    parameters = grader_parameters(info, defs)
    properties: dict[str, JsonValue] = {}
    for p in parameters:
        if p.schema is None:
            continue
        entry: dict[str, JsonValue] = dict(p.schema)
        if p.description:
            entry["description"] = p.description
        if not p.required:
            entry["default"] = p.default
        properties[p.name] = entry
    schema: dict[str, JsonValue] = {
        "type": "object",
        "title": f"{info.name} params",
        "properties": properties,
        "additionalProperties": _takes_any(info),
    }
    required: list[JsonValue] = [p.name for p in parameters if p.required and p.schema is not None]
    if required:
        schema["required"] = required
    return schema


def _takes_any(info: GraderType) -> bool:
    return any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(info.load()).parameters.values()
    )
