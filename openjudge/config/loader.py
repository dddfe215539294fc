"""Load a job config: YAML with line numbers, ``${ENV}`` expansion, precise errors.

Every error names the file, the line and the field::

    judge.yaml:7: providers.judge.kind: Input should be 'openai' (got 'openia')
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from openjudge.config.schema import JobConfig
from openjudge.graders.registry import BUILTIN_GRADERS, lookup

__all__ = ["ConfigError", "load_config", "parse_config"]

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
Path_ = tuple[str | int, ...]


class ConfigError(ValueError):
    """A config file is invalid; ``problems`` holds one ``file:line: field: message`` per issue."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def _line_map(node: yaml.Node, path: Path_, out: dict[Path_, int]) -> None:
    out[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else str(key.value)
            out[(*path, name)] = key.start_mark.line + 1
            _line_map(value, (*path, name), out)
            out[(*path, name)] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _line_map(item, (*path, i), out)


class _Located:
    def __init__(self, source: str, lines: dict[Path_, int]) -> None:
        self.source = source
        self.lines = lines

    def at(self, path: Path_, message: str) -> str:
        probe = path
        while probe and probe not in self.lines:
            probe = probe[:-1]
        line = self.lines.get(probe, 1)
        field = ".".join(str(p) for p in path) or "(top level)"
        return f"{self.source}:{line}: {field}: {message}"


def _expand(value: Any, path: Path_, where: _Located, problems: list[str], env: Mapping[str, str]) -> Any:
    if isinstance(value, str):

        def sub(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            problems.append(
                where.at(
                    path, f"environment variable {name} is not set (set it, or write ${{{name}:-default}})"
                )
            )
            return ""

        return _ENV.sub(sub, value)
    if isinstance(value, dict):
        return {k: _expand(v, (*path, k), where, problems, env) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, (*path, i), where, problems, env) for i, v in enumerate(value)]
    return value


_REWARD_MODEL_KINDS = ("transformers", "vllm")


def _reward_model_provider(config: JobConfig, name: str, where: _Located) -> list[str]:
    """A ``reward_model`` grader scores with a provider that can serve a reward model."""
    provider = config.graders[name].provider
    kinds = "'transformers' (in process) or 'vllm' (its /classify endpoint)"
    if provider is None:
        return [
            where.at(
                ("graders", name),
                f"grader type 'reward_model' scores with a reward model and needs 'provider: <name>' "
                f"(a provider of kind {kinds})",
            )
        ]
    spec = config.providers.get(provider)
    if spec is not None and spec.kind not in _REWARD_MODEL_KINDS:
        return [
            where.at(
                ("graders", name, "provider"),
                f"reward_model graders need a provider of kind {kinds}; {provider!r} is of kind {spec.kind!r}",
            )
        ]
    return []


def _semantic_checks(config: JobConfig, where: _Located) -> list[str]:
    problems: list[str] = []
    for name, grader in config.graders.items():
        base = ("graders", name)
        if grader.type not in BUILTIN_GRADERS:
            try:
                lookup(grader.type)
            except KeyError as exc:
                problems.append(where.at((*base, "type"), str(exc.args[0])))
            continue
        entry = BUILTIN_GRADERS[grader.type]
        if grader.type == "reward_model":
            problems.extend(_reward_model_provider(config, name, where))
        elif entry.kind == "llm" and grader.provider is None:
            problems.append(
                where.at(base, f"grader type {grader.type!r} is an LLM judge and needs 'provider: <name>'")
            )
        if entry.kind == "rule" and grader.provider is not None:
            problems.append(
                where.at(
                    (*base, "provider"), f"grader type {grader.type!r} is rule-based and takes no provider"
                )
            )
        if grader.provider is not None and grader.provider not in config.providers:
            known = ", ".join(sorted(config.providers)) or "none defined"
            problems.append(
                where.at((*base, "provider"), f"unknown provider {grader.provider!r} (providers: {known})")
            )
    for i, agg in enumerate(config.aggregators):
        for key in ("weights", "gates"):
            table = getattr(agg, key) or {}
            for grader_name in table:
                if grader_name not in config.graders:
                    problems.append(
                        where.at(("aggregators", i, key, grader_name), f"no grader named {grader_name!r}")
                    )
        if agg.type == "gate" and not agg.gates:
            problems.append(
                where.at(("aggregators", i), "a 'gate' aggregator needs 'gates: {grader: minimum}'")
            )
    return problems


def parse_config(text: str, *, source: str = "<config>", env: Mapping[str, str] | None = None) -> JobConfig:
    """Parse and validate config text. Raises :class:`ConfigError` listing every problem."""
    env = os.environ if env is None else env
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        raise ConfigError([f"{source}:{line}: invalid YAML: {getattr(exc, 'problem', exc)}"]) from None
    lines: dict[Path_, int] = {}
    if node is not None:
        _line_map(node, (), lines)
    where = _Located(source, lines)
    if not isinstance(data, dict):
        raise ConfigError([where.at((), "the config must be a mapping with at least a 'graders' section")])
    problems: list[str] = []
    data = _expand(data, (), where, problems, env)
    if problems:
        raise ConfigError(problems)
    try:
        config = JobConfig.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
            got = err.get("input")
            suffix = (
                f" (got {got!r})"
                if isinstance(got, str | int | float | bool) and err["type"] != "missing"
                else ""
            )
            problems.append(where.at(loc, f"{err['msg']}{suffix}"))
        raise ConfigError(problems) from None
    problems = _semantic_checks(config, where)
    if problems:
        raise ConfigError(problems)
    return config


def load_config(path: str | Path, *, env: Mapping[str, str] | None = None) -> JobConfig:
    """Read and validate a config file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{p}: cannot read the config file ({exc.strerror or exc})"]) from None
    return parse_config(text, source=str(p), env=env)
