"""Routing: which graders apply to which samples, decided from the sample's fields alone.

A mixed dataset (math, facts, code) needs a grader per kind of row, in the spirit of
VERL's ``data_source`` dispatch and promptfoo's per-test asserts. Two ways say it:

* a condition per grader (``when``): ``{"task": "math"}`` applies the grader to the
  samples whose ``task`` is ``"math"``; a list is "any of" (``{"task": ["math", "algebra"]}``);
  several fields must all hold. Fields are dotted paths, as in mappers (``meta.task``);
* a graders field (``graders_field``): each sample names the graders that apply to it
  (``"graders": ["math", "format"]``, or ``"math, format"`` in a CSV). A sample without
  the field (or with ``null``, or an empty text) names none in particular: every grader
  whose ``when`` holds applies; an empty list names none at all.

A pair that does not apply gets :class:`~openjudge.results.NotApplicable`, without
calling the grader. Only the sample's own fields decide it, never the response: a
response cannot talk its way out of a grader. Two cases are the sample's errors
(``invalid_input`` for every grader of the sample, naming the field), not routing:

* the graders field is malformed, names a grader the runner does not have, or names one
  whose ``when`` does not hold;
* no grader applies to the sample at all: it would have no result and no reward, which is
  a dataset or config mistake to see, not a row to skip quietly. A runner over part of a
  job's graders (one TRL reward function per grader, one meta-eval pass per grader) says
  ``unrouted="not_applicable"``: there, a sample its graders do not cover is simply not
  theirs.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias

from openjudge.results import GraderError, NotApplicable, RowResult

__all__ = ["Condition", "ConditionValue", "Router", "Unrouted", "When", "has_field"]

ConditionValue: TypeAlias = str | int | float | bool
"""A value a field may equal: text, a number or true/false."""

Condition: TypeAlias = Mapping[str, ConditionValue | Sequence[ConditionValue]]
"""``{field: value}`` or ``{field: [value, ...]}`` (any of); every field must hold."""

Unrouted: TypeAlias = Literal["error", "not_applicable"]
"""What a sample no grader applies to gets: an ``invalid_input`` error per grader, or ``NotApplicable``."""

_MISSING = object()
_REASONS_SHOWN = 2


def _text(value: ConditionValue) -> str:
    """How a value is written in a text field (a CSV cell): ``true``, ``3``, ``2.5``, ``math``."""
    return value if isinstance(value, str) else json.dumps(value)


def _equal(found: object, wanted: ConditionValue) -> bool:
    if isinstance(found, bool) or isinstance(wanted, bool):  # True is not 1 here
        return found is wanted or (isinstance(found, str) and found == _text(wanted))
    if isinstance(found, str) and not isinstance(wanted, str):
        return found == _text(wanted)  # CSV values are text: "3" is 3
    return type(found) in (str, int, float) and found == wanted


def _lookup(sample: object, steps: Sequence[str]) -> object:
    value = sample
    for step in steps:
        if isinstance(value, Mapping) and step in value:
            value = value[step]
        elif isinstance(value, Sequence) and not isinstance(value, str | bytes) and step.isdigit():
            index = int(step)
            if index >= len(value):
                return _MISSING
            value = value[index]
        else:
            return _MISSING
    return value


def has_field(sample: object, path: str) -> bool:
    """Whether ``sample`` has the field at the dotted ``path``."""
    return _lookup(sample, path.split(".")) is not _MISSING


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


class When:
    """A compiled condition (see the module docstring).

    Raises:
        ValueError: An empty condition, an empty field, or a value that is not text, a
            number or true/false (or a non-empty list of them).
    """

    __slots__ = ("_fields", "condition")

    def __init__(self, condition: Condition) -> None:
        if not condition:
            raise ValueError("a condition needs at least one field, e.g. {task: math}")
        if not isinstance(condition, Mapping):
            raise ValueError(
                f"a condition is a mapping of fields to values, e.g. {{task: math}}; got {condition!r}"
            )
        fields: list[tuple[str, tuple[str, ...], tuple[ConditionValue, ...]]] = []
        for path, value in condition.items():
            if not isinstance(path, str) or not path:
                raise ValueError(f"a condition's field must be a non-empty dotted path, got {path!r}")
            values = tuple(value) if isinstance(value, list | tuple) else (value,)
            if not values or not all(
                isinstance(v, str | int | bool) or (isinstance(v, float) and math.isfinite(v)) for v in values
            ):
                raise ValueError(
                    f"field {path!r}: a value must be text, a finite number or true/false, or a "
                    f"non-empty list of them; got {value!r}"
                )
            fields.append((path, tuple(path.split(".")), values))
        self.condition = dict(condition)
        self._fields = tuple(fields)

    @property
    def fields(self) -> tuple[str, ...]:
        """The dotted paths it reads."""
        return tuple(path for path, _, _ in self._fields)

    def mismatch(self, sample: object) -> str | None:
        """``None`` when the condition holds for ``sample``, else why not (one short phrase)."""
        for path, steps, values in self._fields:
            found = _lookup(sample, steps)
            if found is _MISSING:
                return f"the sample has no field {path!r}"
            if not any(_equal(found, v) for v in values):
                wanted = repr(values[0]) if len(values) == 1 else f"one of {', '.join(map(repr, values))}"
                return f"{path} is {_shown(found)}, not {wanted}"
        return None

    def __repr__(self) -> str:
        return f"When({self.condition!r})"


class Router:
    """Decides, per sample, which graders apply (see the module docstring).

    Args:
        keys: The graders' result names, in the runner's order.
        whens: Each grader's condition (``None``: every sample).
        graders_field: The sample field that names the graders to run, if any.
        unrouted: What a sample no grader applies to gets (see the module docstring).
        known: The names a graders field may hold (default: ``keys``); a runner over part
            of a job's graders knows the job's, so a sample naming another of them is not
            an error there.
    """

    __slots__ = ("_field", "_keys", "_known", "_steps", "_unrouted", "_whens", "active")

    def __init__(
        self,
        keys: Sequence[str],
        whens: Sequence[When | None],
        graders_field: str | None,
        unrouted: Unrouted = "error",
        known: Sequence[str] = (),
    ) -> None:
        if graders_field is not None and not graders_field:
            raise ValueError("graders_field must be a field name (a dotted path), or None")
        if unrouted not in ("error", "not_applicable"):
            raise ValueError(f"unrouted must be 'error' or 'not_applicable', got {unrouted!r}")
        self._unrouted = unrouted
        self._keys = tuple(keys)
        self._known = tuple(dict.fromkeys((*keys, *known)))
        self._whens = tuple(whens)
        self._field = graders_field
        self._steps = tuple(graders_field.split(".")) if graders_field else ()
        self.active = graders_field is not None or any(w is not None for w in whens)
        """Whether any sample can have a grader left out (else :meth:`plan` is never needed)."""

    def plan(self, sample: Any) -> tuple[RowResult | None, ...] | None:
        """Per grader: ``None`` to grade it, or its result without grading (not applicable,
        or the sample's error). ``None`` when every grader is to be graded."""
        named = self._named(sample)
        if isinstance(named, str):  # the graders field itself is wrong
            return tuple(self._error(key, named) for key in self._keys)
        out: list[RowResult | None] = []
        for key, when in zip(self._keys, self._whens, strict=True):
            why = when.mismatch(sample) if when is not None else None
            if named is not None and key not in named:
                out.append(NotApplicable(name=key, reason=f"not named in the sample's {self._field!r}"))
            elif why is None:
                out.append(None)
            elif named is not None:
                out.append(
                    self._error(key, f"{self._field} names {key!r}, but its 'when' does not hold ({why})")
                )
            else:
                out.append(NotApplicable(name=key, reason=why))
        if self._unrouted == "error" and all(isinstance(r, NotApplicable) for r in out):
            message = self._nothing_applies(out)
            return tuple(GraderError(name=key, kind="invalid_input", message=message) for key in self._keys)
        return tuple(out) if any(r is not None for r in out) else None

    def _named(self, sample: Any) -> frozenset[str] | str | None:
        """The graders the sample names; ``None`` if it names none; a message if the field is wrong."""
        if self._field is None:
            return None
        value = _lookup(sample, self._steps)
        if value is _MISSING or value is None or (isinstance(value, str) and not value.strip()):
            return None  # names none in particular (a CSV cannot write null: an empty cell)
        if isinstance(value, str):
            names = [part.strip() for part in value.split(",") if part.strip()]
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            names = list(value)
        else:
            return (
                f"field {self._field!r} must name graders (a name, a list of names, or names separated "
                f"by commas), got {_shown(value)}"
            )
        unknown = [n for n in names if n not in self._known]
        if unknown:
            close = difflib.get_close_matches(unknown[0], self._known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            return (
                f"field {self._field!r} names {unknown[0]!r}, which is not a grader here{hint} "
                f"(graders: {', '.join(self._known)})"
            )
        return frozenset(names)

    def _nothing_applies(self, out: Sequence[RowResult | None]) -> str:
        reasons = [
            f"{key}: {r.reason}"
            for key, r in zip(self._keys, out, strict=True)
            if isinstance(r, NotApplicable)
        ]
        more = len(reasons) - _REASONS_SHOWN
        shown = "; ".join(reasons[:_REASONS_SHOWN]) + (f"; and {more} more" if more > 0 else "")
        return (
            f"no grader applies to this sample ({shown}): route it to a grader ('when' or "
            f"{'its ' + repr(self._field) if self._field else 'a graders field'}), or leave it out of the dataset"
        )

    @staticmethod
    def _error(key: str, message: str) -> GraderError:
        return GraderError(name=key, kind="invalid_input", message=f"grader {key!r}: {message}")
