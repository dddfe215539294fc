"""How a grader gets its inputs: :class:`GraderConfig` and its checked, compiled form."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openjudge.graders.base_grader import BaseGrader, InputSpec, InvalidInputError
from openjudge.runner._mapper import CompiledMapper, Mapper, compile_mapper
from openjudge.runner._routing import Condition, When

__all__ = ["BoundGrader", "GraderConfig"]


@dataclass(slots=True)
class GraderConfig:
    """A grader, how each sample's fields map to its inputs, and which samples it applies to.

    Args:
        grader: The grader.
        mapper: ``{input_name: "dotted.path"}`` or a callable ``sample -> inputs``;
            ``None`` passes the sample's fields the grader takes.
        when: The samples it applies to, e.g. ``{"task": "math"}`` (a list of values is
            "any of"; every field must hold); elsewhere its result is
            :class:`~openjudge.results.NotApplicable`. ``None``: every sample.
    """

    grader: BaseGrader
    mapper: Mapper | None = None
    when: Condition | None = None

    @classmethod
    def create(cls, value: GraderConfig | BaseGrader | tuple[BaseGrader, Mapper | None]) -> GraderConfig:
        """Accept a config, a bare grader, or a ``(grader, mapper)`` pair."""
        if isinstance(value, GraderConfig):
            return value
        if isinstance(value, BaseGrader):
            return cls(grader=value)
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], BaseGrader):
            return cls(grader=value[0], mapper=value[1])
        raise TypeError(f"expected GraderConfig, a grader or (grader, mapper), got {type(value).__name__}")


class BoundGrader:
    """One grader as the runner calls it: its result key, the grader, its compiled mapper and
    inputs, and its compiled condition.

    Dict mappers are checked against the grader's parameters here, when the runner is built.
    """

    __slots__ = ("checked", "grader", "key", "mapper", "spec", "when")

    def __init__(self, key: str, config: GraderConfig) -> None:
        self.key = key
        self.grader = config.grader
        try:
            self.when = When(config.when) if config.when is not None else None
        except ValueError as exc:
            raise ValueError(f"grader {key!r}: when: {exc}") from None
        self.spec: InputSpec = config.grader.input_spec()
        self.mapper = compile_mapper(config.mapper)
        self.checked = isinstance(self.mapper, CompiledMapper)
        if isinstance(self.mapper, CompiledMapper):
            self._check(self.mapper.names)

    def _check(self, names: frozenset[str]) -> None:
        kind = type(self.grader).__name__
        if not self.spec.accepts_any:
            unknown = sorted(names - self.spec.names)
            if unknown:
                raise ValueError(
                    f"grader {self.key!r} ({kind}) has no input {unknown[0]!r}; "
                    f"its inputs are: {', '.join(sorted(self.spec.names)) or '(none)'}"
                )
        missing = sorted(self.spec.required - names)
        if missing:
            raise ValueError(
                f"mapper for grader {self.key!r} ({kind}) does not provide required input {missing[0]!r}"
            )

    def inputs(self, sample: Any) -> Mapping[str, Any]:
        if self.mapper is None:
            if not isinstance(sample, Mapping):
                raise InvalidInputError(
                    f"sample must be a mapping of field names to values, got {type(sample).__name__}"
                )
            fields: Mapping[str, Any] = sample
        else:
            fields = self.mapper(sample)
            if self.checked:
                return fields
            if not isinstance(fields, Mapping):
                raise InvalidInputError(f"mapper returned {type(fields).__name__}, expected a dict of inputs")
        missing = [name for name in self.spec.required if name not in fields]
        if missing:
            raise InvalidInputError(
                f"no input {sorted(missing)[0]!r} for grader {self.key!r}: add the field to the sample "
                "or map it with GraderConfig(mapper=...)"
            )
        return fields if self.spec.accepts_any else {k: v for k, v in fields.items() if k in self.spec.names}
