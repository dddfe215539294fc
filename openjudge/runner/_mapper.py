"""Mappers: how a sample's fields become a grader's keyword inputs.

A mapper is a callable ``sample -> inputs`` or a dict ``{input_name: "dotted.path"}``.
Paths walk mappings by key and sequences by integer index; a non-integer step over a
sequence maps over its items (``"messages.content"`` gives every message's content).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any, TypeAlias

__all__ = ["CompiledMapper", "Mapper", "MissingFieldError", "compile_mapper"]

Mapper: TypeAlias = Mapping[str, str] | Callable[[Mapping[str, Any]], Mapping[str, Any]]


class MissingFieldError(KeyError):
    """A mapped path is absent from a sample."""

    def __init__(self, path: str, step: str) -> None:
        super().__init__(path)
        self.path = path
        self.step = step

    def __str__(self) -> str:
        if self.step == self.path:
            return f"sample has no field {self.path!r}"
        return f"sample has no field {self.path!r} (no {self.step!r} at that point)"


def _walk(value: Any, steps: Sequence[str], path: str) -> Any:
    for i, step in enumerate(steps):
        if isinstance(value, Mapping):
            if step not in value:
                raise MissingFieldError(path, step)
            value = value[step]
        elif isinstance(value, Sequence) and not isinstance(value, str | bytes):
            if step.lstrip("-").isdigit():
                index = int(step)
                if not -len(value) <= index < len(value):
                    raise MissingFieldError(path, step)
                value = value[index]
            else:
                rest = steps[i:]
                return [_walk(item, rest, path) for item in value]
        else:
            raise MissingFieldError(path, step)
    return value


class CompiledMapper:
    """A dict mapper with its paths split once."""

    __slots__ = ("_flat", "_paths", "names")

    def __init__(self, mapping: Mapping[str, str]) -> None:
        for name, path in mapping.items():
            if not isinstance(path, str) or not path:
                raise TypeError(f"mapper entry {name!r} must be a dotted path string, got {path!r}")
        self._paths = tuple((name, tuple(path.split(".")), path) for name, path in mapping.items())
        self.names = frozenset(mapping)
        # The usual mapper renames top-level fields: for a dict sample, one C-level lookup of
        # all of them (itemgetter of two or more keys returns a tuple).
        self._flat: tuple[tuple[str, ...], itemgetter[Any]] | None = None
        if len(mapping) >= 2 and all(len(steps) == 1 for _, steps, _ in self._paths):
            self._flat = (tuple(mapping), itemgetter(*mapping.values()))

    def __call__(self, sample: Mapping[str, Any]) -> dict[str, Any]:
        if self._flat is not None and type(sample) is dict:
            names, get = self._flat
            try:
                return dict(zip(names, get(sample), strict=True))
            except KeyError:
                pass  # the walk below names the missing field
        return {name: _walk(sample, steps, path) for name, steps, path in self._paths}


def compile_mapper(mapper: Mapper | None) -> Callable[[Mapping[str, Any]], Mapping[str, Any]] | None:
    """A callable for any mapper form (``None`` stays ``None``: the sample is the input)."""
    if mapper is None:
        return None
    if isinstance(mapper, Mapping):
        return CompiledMapper(mapper)
    if callable(mapper):
        return mapper
    raise TypeError(f"mapper must be a dict of dotted paths or a callable, got {type(mapper).__name__}")
