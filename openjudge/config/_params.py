"""Check a grader's ``params`` from YAML against its constructor, before calling it.

Each parameter is checked by name (an unknown one gets a "did you mean" and the valid
names) and by type (the constructor's annotation, validated with pydantic where it can
be); ``score_range`` and ``sampling`` are converted to their objects. Every problem is
reported as ``file:line: graders.<name>.params.<param>: what is wrong``.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel, JsonValue, TypeAdapter, ValidationError

from openjudge.config._loader import did_you_mean, error_message, problems_from
from openjudge.config._locations import FieldPath, Located
from openjudge.graders._binding import JUDGE, REWARD_MODEL
from openjudge.models.chat_model import Sampling
from openjudge.results import ScoreRange

__all__ = ["INJECTED_PARAMS", "grader_arguments"]

INJECTED_PARAMS = frozenset({JUDGE.parameter, REWARD_MODEL.parameter})
"""Constructor parameters the config sets itself from the grader's provider (``model`` for
judges, ``client`` for reward-model graders; see :mod:`openjudge.graders._binding`)."""

_SKIPPED = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def _adapter(cls: type, name: str) -> TypeAdapter[Any] | None:
    """A validator for one constructor parameter, or ``None`` if its type cannot be checked."""
    annotation = inspect.signature(cls).parameters[name].annotation
    if annotation is inspect.Parameter.empty:
        return None
    if isinstance(annotation, str):  # postponed annotations: resolve in the defining module
        owner = next((c for c in cls.__mro__ if "__init__" in vars(c)), cls)
        module = sys.modules.get(owner.__module__)
        try:
            annotation = eval(annotation, vars(module) if module is not None else {})
        except Exception:
            return None  # a name only imported for type checking
    try:
        return TypeAdapter(annotation)
    except Exception:
        return None  # a type pydantic cannot validate (a protocol, a callable class, ...)


def _suggest(name: str, choices: list[str]) -> str:
    message = did_you_mean(name, choices, "parameter")
    if "did you mean" not in message:  # a name inside a longer one: 'mode' -> 'match_mode'
        near = [c for c in choices if name in c or c in name]
        if near:
            message = message.replace(" (valid:", f"; did you mean {near[0]!r}? (valid:", 1)
    return message


def grader_arguments(
    cls: type,
    params: Mapping[str, JsonValue],
    where: Located,
    path: FieldPath,
    *,
    injected: frozenset[str] = INJECTED_PARAMS,
) -> tuple[dict[str, Any], list[str]]:
    """The constructor arguments for ``params``, and the problems found (file:line messages).

    Args:
        cls: The grader class (or an aggregator class of the user's).
        params: The ``params`` mapping from the config.
        where: The config's locations.
        path: The field path of ``params`` (``("graders", name, "params")``).
        injected: Parameters the config sets itself, refused in ``params``.
    """
    signature = inspect.signature(cls)
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
    accepted = {
        name: p for name, p in signature.parameters.items() if p.kind not in _SKIPPED and name not in injected
    }
    arguments: dict[str, Any] = {}
    problems: list[str] = []
    for name, value in params.items():
        at = (*path, name)
        if name in injected:
            who = "the grader's 'provider'" if name in INJECTED_PARAMS else f"the config's {name!r}"
            problems.append(where.at(at, f"{name!r} is set by {who}; remove it from params"))
            continue
        if name not in accepted and not takes_any:
            problems.append(where.at(at, _suggest(name, list(accepted))))
            continue
        if name == "score_range":
            try:
                arguments[name] = ScoreRange.coerce(value)
            except ValueError as exc:
                problems.append(where.at(at, str(exc).replace("(1, 5) (in YAML: [1, 5])", "[1, 5]")))
            continue
        if name == "sampling" and isinstance(value, Mapping):
            try:
                arguments[name] = Sampling.model_validate(value)
            except ValidationError as exc:
                problems += problems_from(exc, Sampling, where, at)
            continue
        argument: Any = value
        adapter = _adapter(cls, name) if name in accepted else None
        if adapter is not None:
            try:
                checked = adapter.validate_python(value)
                if isinstance(checked, Iterator):
                    list(checked)  # an Iterable[...] parameter validates its items lazily: now
            except ValidationError as exc:
                problems += [where.at((*at, *e["loc"]), error_message(e, BaseModel)) for e in exc.errors()]
                continue
            if isinstance(value, list) and isinstance(checked, tuple):
                argument = checked  # the tuple it wants for a YAML list
        arguments[name] = argument
    for name, p in accepted.items():
        if p.default is inspect.Parameter.empty and name not in params:
            problems.append(where.at(path, f"missing required parameter {name!r}"))
    return arguments, problems
