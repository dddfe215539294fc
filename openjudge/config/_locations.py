"""Where each field of a config file is, so every message can say ``file:line: field: problem``.

:class:`Located` maps field paths (``("graders", "judge", "params", "template")``) to the
line they are on; a path not in the map is reported at its closest parent's line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import yaml

__all__ = ["FieldPath", "Located", "duplicate_keys", "line_map", "one_line"]

FieldPath: TypeAlias = tuple[str | int, ...]


class Located:
    """A config's source name and the line of each of its fields."""

    def __init__(self, source: str, lines: dict[FieldPath, int] | None = None) -> None:
        self.source = source
        self.lines = lines or {}

    def line(self, path: Sequence[str | int]) -> int:
        probe = tuple(path)
        while probe and probe not in self.lines:
            probe = probe[:-1]
        return self.lines.get(probe, 1)

    def at(self, path: Sequence[str | int], message: str) -> str:
        """``"file:line: field.path: message"`` (on one line)."""
        field = ".".join(str(p) for p in path) or "(top level)"
        return f"{self.source}:{self.line(path)}: {field}: {one_line(message)}"


def one_line(message: str) -> str:
    """An exception's text on one line (pydantic's multi-line reports become ``; ``-separated)."""
    lines = [line.strip() for line in message.splitlines()]
    kept = [line for line in lines if line and not line.startswith("For further information")]
    return "; ".join(kept)


def _key_name(key: yaml.Node) -> str:
    return str(key.value) if isinstance(key, yaml.ScalarNode) else "<complex key>"


def line_map(node: yaml.Node) -> dict[FieldPath, int]:
    """The 1-based line of every mapping key and sequence item under ``node``."""
    out: dict[FieldPath, int] = {}

    def walk(current: yaml.Node, path: FieldPath) -> None:
        out.setdefault(path, current.start_mark.line + 1)
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                sub = (*path, _key_name(key))
                out[sub] = key.start_mark.line + 1
                walk(value, sub)
        elif isinstance(current, yaml.SequenceNode):
            for i, item in enumerate(current.value):
                walk(item, (*path, i))

    walk(node, ())
    return out


def duplicate_keys(node: yaml.Node, where: Located) -> list[str]:
    """A problem per key given twice in one mapping (YAML would silently keep the last)."""
    problems: list[str] = []

    def walk(current: yaml.Node, path: FieldPath) -> None:
        if isinstance(current, yaml.MappingNode):
            first: dict[str, int] = {}
            for key, value in current.value:
                name = _key_name(key)
                line = key.start_mark.line + 1
                if name in first:
                    field = ".".join(str(p) for p in (*path, name))
                    problems.append(
                        f"{where.source}:{line}: {field}: duplicate key {name!r} (first at line "
                        f"{first[name]}); YAML would keep only the last one: rename or remove one"
                    )
                else:
                    first[name] = line
                walk(value, (*path, name))
        elif isinstance(current, yaml.SequenceNode):
            for i, item in enumerate(current.value):
                walk(item, (*path, i))

    walk(node, ())
    return problems
