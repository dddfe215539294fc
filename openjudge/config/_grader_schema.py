"""The config schema's ``graders`` entries: a union discriminated on ``type``, each with its ``params``.

``GraderSpec`` validates ``params`` as free JSON (the config layer checks them against
the constructor when it builds, with file:line messages: :mod:`._params`); the exported
JSON Schema says more, so an editor completes and checks them: one branch per built-in
``type`` whose ``params`` are that grader's constructor parameters
(:func:`openjudge.graders._parameters.params_schema`), and one for a class of your own
(``module:ClassName``) whose ``params`` stay free.
"""

from __future__ import annotations

from typing import cast

from pydantic import JsonValue

from openjudge.graders._parameters import params_schema
from openjudge.graders._registry import BUILTIN_GRADERS

__all__ = ["IMPORT_PATH", "discriminate_graders"]

IMPORT_PATH = r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$"
"""A class of the user's, ``module:ClassName``."""


def _ref(key: str) -> str:
    return f"#/$defs/{key}"


def discriminate_graders(defs: dict[str, JsonValue]) -> None:
    """Replace ``defs["GraderSpec"]`` by the union on ``type`` (its branches and params added to ``defs``).

    Raises:
        ValueError: Two schema definitions would share a name with different contents.
    """
    base = cast(dict[str, JsonValue], defs["GraderSpec"])
    properties = cast(dict[str, JsonValue], base["properties"])
    common: dict[str, JsonValue] = {}
    for key, value in properties.items():
        if key not in ("type", "params"):  # fields every branch has: defined once
            defs[f"GraderSpec.{key}"] = value
            common[key] = {"$ref": _ref(f"GraderSpec.{key}")}
    shared: dict[str, JsonValue] = {}
    branches: list[JsonValue] = []
    mapping: dict[str, JsonValue] = {}
    for info in sorted(BUILTIN_GRADERS.values(), key=lambda entry: entry.name):
        params_key, grader_key = f"params.{info.name}", f"grader.{info.name}"
        defs[params_key] = params_schema(info, shared)
        defs[grader_key] = {
            "type": "object",
            "title": f"{info.name} grader",
            "description": info.summary,
            "properties": {
                "type": {"const": info.name, "description": info.summary},
                "params": {"$ref": _ref(params_key)},
                **common,
            },
            "required": ["type"],
            "additionalProperties": False,
        }
        branches.append({"$ref": _ref(grader_key)})
        mapping[info.name] = _ref(grader_key)
    defs["grader.class"] = {
        "type": "object",
        "title": "a grader class of your own",
        "properties": {
            "type": {
                "type": "string",
                "pattern": IMPORT_PATH,
                "description": "module:ClassName, imported with the config's folder on the Python path",
            },
            "params": properties["params"],
            **common,
        },
        "required": ["type"],
        "additionalProperties": False,
    }
    branches.append({"$ref": _ref("grader.class")})
    for key, definition in shared.items():
        if key in defs and defs[key] != definition:
            raise ValueError(f"two different JSON Schema definitions are both named {key!r}")
        defs[key] = definition
    defs["GraderSpec"] = {
        "title": "GraderSpec",
        "description": base.get("description", ""),
        "oneOf": branches,
        "discriminator": {"propertyName": "type", "mapping": mapping},
    }
