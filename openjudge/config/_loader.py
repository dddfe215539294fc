"""Load a job config: YAML with line numbers, ``${ENV}`` expansion, precise errors.

Every error names the file, the line and the field, and says how to fix it::

    judge.yaml:7: providers.judge.kind: unknown provider kind 'openia'; did you mean 'openai'? ...

A key given twice in one mapping is an error (YAML itself would keep the last silently).
"""

from __future__ import annotations

import difflib
import os
import re
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from openjudge.config._binding import binding_problems
from openjudge.config._custom import grader_class, is_import_path, load_class
from openjudge.config._locations import FieldPath, Located, duplicate_keys, line_map
from openjudge.config._spec import PROVIDER_KINDS, AggregatorSpec, JobConfig
from openjudge.errors import ConfigError

__all__ = [
    "ConfigError",
    "did_you_mean",
    "error_message",
    "load_config",
    "parse_config",
    "problems_from",
]

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_INSTANCE_OF = re.compile(r" or instance of \w+")


def did_you_mean(name: str, choices: Sequence[str], what: str) -> str:
    """``"unknown <what> 'x'; did you mean 'y'? (<what>s: a, b, c)"``."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    listing = ", ".join(sorted(choices)) or "none"
    return f"unknown {what} {name!r}{hint} (valid: {listing})"


def _expand(
    value: Any,
    path: FieldPath,
    where: Located,
    problems: list[str],
    env: Mapping[str, str],
    unset: list[FieldPath] | None = None,
) -> Any:
    if isinstance(value, str):

        def sub(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            if unset is not None:
                unset.append(path)
            problems.append(
                where.at(
                    path, f"environment variable {name} is not set (set it, or write ${{{name}:-default}})"
                )
            )
            return ""

        return _ENV.sub(sub, value)
    if isinstance(value, dict):
        return {k: _expand(v, (*path, k), where, problems, env, unset) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, (*path, i), where, problems, env, unset) for i, v in enumerate(value)]
    return value


def _model_at(root: type[BaseModel], loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The model under ``root`` that holds the field at ``loc`` (walking dicts, lists and optionals)."""
    current: object = root
    steps = list(loc)
    while steps:
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(steps.pop(0)))
            if field is None:
                return None
            current = field.annotation
            continue
        origin = typing.get_origin(current)
        args = typing.get_args(current)
        if origin in (typing.Union, types.UnionType):
            current = next((a for a in args if a is not type(None)), None)
        elif origin is dict and len(args) == 2:
            steps.pop(0)
            current = args[1]
        elif origin is list and args:
            steps.pop(0)
            current = args[0]
        else:
            return None
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def error_message(err: ErrorDetails, root: type[BaseModel]) -> str:
    """A pydantic error as a config message: unknown fields get a "did you mean"."""
    loc = err["loc"]
    if err["type"] == "extra_forbidden" and loc:
        model = _model_at(root, loc[:-1])
        if model is not None:
            return did_you_mean(str(loc[-1]), list(model.model_fields), "field") + "; remove or rename it"
    message = _INSTANCE_OF.sub("", err["msg"]).removeprefix("Value error, ")
    got = err.get("input")
    if err["type"] != "missing" and isinstance(got, str | int | float | bool) and repr(got) not in message:
        message += f" (got {got!r})"
    return message


def problems_from(
    exc: ValidationError,
    root: type[BaseModel],
    where: Located,
    base: FieldPath = (),
    *,
    skip: Sequence[FieldPath] = (),
) -> list[str]:
    """One ``file:line: field: message`` per error of a validation of ``root`` at ``base``.

    Errors at or under a path of ``skip`` (already reported otherwise) are left out.
    """
    problems = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        if any(loc[: len(s)] == tuple(s) for s in skip):
            continue
        problems.append(where.at((*base, *loc), error_message(err, root)))
    return list(dict.fromkeys(problems))


@dataclass(frozen=True, slots=True)
class _Dropped:
    """Entries left out of a config because they were invalid (already reported)."""

    providers: frozenset[str] = frozenset()
    graders: frozenset[str] = frozenset()
    aggregators: bool = False


_CUSTOM_AGGREGATOR_FIELDS = ("weights", "gates", "on_error", "fail_score")


def _grader_checks(
    config: JobConfig, name: str, where: Located, base_dir: Path | None, dropped: _Dropped
) -> list[str]:
    from openjudge.config._params import grader_arguments  # params imports this module

    grader = config.graders[name]
    base = ("graders", name)
    try:
        cls, entry = grader_class(grader.type, base_dir)
    except ValueError as exc:
        return [where.at((*base, "type"), str(exc))]
    problems = binding_problems(grader.type, entry.binding, grader.provider, config.providers, where, base)
    if (
        grader.provider is not None
        and grader.provider not in config.providers
        and grader.provider not in dropped.providers
    ):
        problems.append(
            where.at((*base, "provider"), did_you_mean(grader.provider, list(config.providers), "provider"))
        )
    _, found = grader_arguments(cls, grader.params, where, (*base, "params"))
    return problems + found


def _custom_aggregator_checks(
    agg: AggregatorSpec, i: int, where: Located, base_dir: Path | None
) -> list[str]:
    from openjudge.config._params import grader_arguments  # params imports this module

    try:
        cls = load_class(agg.type, base_dir, what="aggregator")
    except ValueError as exc:
        return [where.at(("aggregators", i, "type"), str(exc))]
    problems = [
        where.at(
            ("aggregators", i, key),
            f"{key!r} applies to the built-in aggregators; give your class's settings in 'params'",
        )
        for key in _CUSTOM_AGGREGATOR_FIELDS
        if key in agg.model_fields_set
    ]
    _, found = grader_arguments(
        cls, agg.params, where, ("aggregators", i, "params"), injected=frozenset({"name"})
    )
    return problems + found


def _semantic_checks(
    config: JobConfig, where: Located, base_dir: Path | None = None, dropped: _Dropped = _Dropped()
) -> list[str]:
    problems: list[str] = []
    for name, provider in config.providers.items():
        takes = PROVIDER_KINDS[provider.kind].fields
        for field in sorted(provider.model_fields_set - takes):
            kinds = [k for k, kind in PROVIDER_KINDS.items() if field in kind.fields]
            if kinds:
                problems.append(
                    where.at(
                        ("providers", name, field),
                        f"applies to kind {' or '.join(repr(k) for k in kinds)}, not {provider.kind!r}",
                    )
                )
    for name in config.graders:
        problems += _grader_checks(config, name, where, base_dir, dropped)
    if dropped.aggregators:
        return problems  # their indices no longer match the file's; their problems are reported
    names: dict[str, str] = {}
    for i, agg in enumerate(config.aggregators):
        name = agg.result_name
        if name in config.graders or name in names:
            clash = "a grader" if name in config.graders else f"aggregators[{names[name]}]"
            problems.append(
                where.at(
                    ("aggregators", i), f"the name {name!r} is already used by {clash}: give 'name: ...'"
                )
            )
        names[name] = str(i)
        if is_import_path(agg.type):
            problems += _custom_aggregator_checks(agg, i, where, base_dir)
            continue
        if agg.params:
            problems.append(
                where.at(
                    ("aggregators", i, "params"),
                    f"'params' is for aggregator classes of your own; {agg.type!r} takes "
                    "weights, gates, on_error and fail_score",
                )
            )
        earlier = [a.result_name for a in config.aggregators[:i]]
        later = {a.result_name for a in config.aggregators[i:]}
        for key in ("weights", "gates"):
            table = getattr(agg, key) or {}
            for grader_name in table:
                if grader_name in config.graders or grader_name in dropped.graders or grader_name in earlier:
                    continue
                at = ("aggregators", i, key, grader_name)
                if grader_name in later:
                    problems.append(
                        where.at(
                            at,
                            f"aggregator {grader_name!r} is computed after this one: list it before "
                            "the aggregators that read it",
                        )
                    )
                else:
                    known = [*config.graders, *earlier]
                    problems.append(
                        where.at(at, did_you_mean(grader_name, known, "grader or earlier aggregator"))
                    )
        if agg.type == "gate" and not agg.gates:
            problems.append(
                where.at(("aggregators", i), "a 'gate' aggregator needs 'gates: {grader: minimum}'")
            )
    return problems


def _salvage(data: dict[str, Any], exc: ValidationError) -> tuple[JobConfig | None, _Dropped]:
    """The config without the entries that failed validation, to check the rest in the same pass.

    An invalid provider or grader is left out (and references to it are not reported
    again); an invalid aggregator leaves all of them out; an invalid other section falls
    back to its defaults. ``None`` if what is left is still invalid (no graders at all).
    """
    kept: dict[str, Any] = {
        k: dict(v) if isinstance(v, dict) else v for k, v in data.items() if k != "aggregators"
    }
    providers: set[str] = set()
    graders: set[str] = set()
    aggregators_ok = True
    for err in exc.errors():
        loc = err["loc"]
        if not loc:
            return None, _Dropped()
        head = loc[0]
        if head in ("providers", "graders") and len(loc) >= 2 and isinstance(kept.get(head), dict):
            kept[head].pop(loc[1], None)
            (providers if head == "providers" else graders).add(str(loc[1]))
        elif head == "aggregators":
            aggregators_ok = False
        else:
            kept.pop(str(head), None)
    if aggregators_ok and "aggregators" in data:
        kept["aggregators"] = data["aggregators"]
    try:
        config = JobConfig.model_validate(kept)
    except ValidationError:
        return None, _Dropped()
    return config, _Dropped(frozenset(providers), frozenset(graders), not aggregators_ok)


def _compose(text: str, source: str) -> tuple[yaml.Node | None, Any]:
    """Parse YAML once: the node tree (for lines and duplicate keys) and the data it builds."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        raise ConfigError(
            [f"{source}:{line}: invalid YAML: {getattr(exc, 'problem', None) or exc}"]
        ) from None
    finally:
        loader.dispose()
    return node, data


def parse_config(
    text: str,
    *,
    source: str = "<config>",
    env: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
) -> JobConfig:
    """Parse and validate config text. Raises :class:`ConfigError` listing every problem.

    Independent problems are all reported in one pass: an invalid provider, grader or
    aggregator is set aside and the rest is still checked (classes loaded, parameters
    against their constructors). ``base_dir`` is where ``module:Class`` types are imported
    from (the config file's folder).
    """
    env = os.environ if env is None else env
    node, data = _compose(text, source)
    where = Located(source, line_map(node) if node is not None else {})
    problems: list[str] = duplicate_keys(node, where) if node is not None else []
    if not isinstance(data, dict):
        raise ConfigError(
            [*problems, where.at((), "the config must be a mapping with at least a 'graders' section")]
        )
    unset: list[FieldPath] = []  # fields naming an unset ${VAR}: reported once, not again as invalid
    data = _expand(data, (), where, problems, env, unset)
    dropped = _Dropped()
    try:
        config: JobConfig | None = JobConfig.model_validate(data)
    except ValidationError as exc:
        problems += problems_from(exc, JobConfig, where, skip=unset)
        config, dropped = _salvage(data, exc)
    if config is not None:
        problems += _semantic_checks(config, where, base_dir, dropped)
    if problems or config is None:
        raise ConfigError(list(dict.fromkeys(problems)))
    config._located = where
    config._base_dir = base_dir
    return config


def load_config(path: str | Path, *, env: Mapping[str, str] | None = None) -> JobConfig:
    """Read and validate a config file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{p}: cannot read the config file ({exc.strerror or exc})"]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            [f"{p}: the config file is not UTF-8 text ({exc.reason} at byte {exc.start})"]
        ) from None
    return parse_config(text, source=str(p), env=env, base_dir=p.parent)
