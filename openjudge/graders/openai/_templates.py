"""OpenAI's ``{{ namespace.path }}`` templates: parsed once, rendered per sample in one pass.

A reference is ``item`` or ``sample`` followed by keys and indexes, JSON-path style:
``{{ item.reference_answer }}``, ``{{ sample.output_json.steps[0].value }}``,
``{{ sample.output_tools[0].function.name }}``. ``sample`` has ``output_text``,
``output_json``, ``output_tools`` and ``choices`` (see :mod:`._sample`).

Rendering inserts a string value as is; any other value as compact JSON (``3``,
``2.5``, ``true``, ``null``, ``{"a":1}``). OpenAI does not document how non-strings
are written; JSON is the choice here (``true``, not Python's ``True``).

A reference that cannot be followed raises :class:`VariableError` naming the path and
its namespace: a missing ``item`` field is the dataset's problem, a missing ``sample``
field the response's (see :mod:`._grader` for what each becomes).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from pydantic import JsonValue

__all__ = [
    "SAMPLE_FIELDS",
    "Namespace",
    "Reference",
    "Template",
    "VariableError",
    "parse_reference",
    "render_value",
]

Namespace: TypeAlias = Literal["item", "sample"]
SAMPLE_FIELDS = frozenset({"output_text", "output_json", "output_tools", "choices"})
_PLACEHOLDER = re.compile(r"\{\{\s*(.*?)\s*\}\}", re.DOTALL)
_STEP = re.compile(r"\.([^.\[\]\s]+)|\[\s*(-?\d+)\s*\]|\[\s*(['\"])(.*?)\3\s*\]")


class VariableError(LookupError):
    """A template reference that a sample or item cannot fill (OpenAI's ``invalid_variable_error``).

    Attributes:
        namespace: ``item`` or ``sample``.
        path: The reference as written.
        cause: ``invalid_variable_error``, or ``sample_parse_error`` when the reference needs
            ``sample.output_json`` and the output is not JSON.
    """

    def __init__(self, namespace: Namespace, path: str, message: str, cause: str = "invalid_variable_error"):
        super().__init__(message)
        self.namespace: Namespace = namespace
        self.path = path
        self.cause = cause

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.namespace, self.path, str(self), self.cause))


@dataclass(frozen=True, slots=True)
class Reference:
    """One ``namespace.path``: the namespace and the steps (keys and integer indexes)."""

    text: str
    namespace: Namespace
    steps: tuple[str | int, ...]

    def resolve(self, item: Mapping[str, JsonValue], sample: Mapping[str, JsonValue]) -> JsonValue:
        """The value at this reference.

        Raises:
            VariableError: A step is missing (or ``sample.output_json`` is not available).
        """
        value: JsonValue = dict(item) if self.namespace == "item" else dict(sample)
        walked: str = self.namespace
        for step in self.steps:
            if isinstance(step, int):
                if not isinstance(value, list) or not -len(value) <= step < len(value):
                    size = f"a list of {len(value)}" if isinstance(value, list) else type(value).__name__
                    raise self._missing(f"{walked}[{step}] does not exist ({walked} is {size})")
                value = value[step]
                walked = f"{walked}[{step}]"
            else:
                if not isinstance(value, dict) or step not in value:
                    what = (
                        "has no field"
                        if isinstance(value, dict)
                        else f"is {_kind(value)}, so it has no field"
                    )
                    raise self._missing(f"{walked} {what} {step!r}")
                value = value[step]
                walked = f"{walked}.{step}"
            if walked == "sample.output_json" and value is None:
                raise VariableError(
                    "sample",
                    self.text,
                    f"{{{{ {self.text} }}}}: the response is not valid JSON, so sample.output_json is empty",
                    "sample_parse_error",
                )
        return value

    def _missing(self, what: str) -> VariableError:
        return VariableError(self.namespace, self.text, f"{{{{ {self.text} }}}}: {what}")


def _kind(value: JsonValue) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


def parse_reference(text: str) -> Reference:
    """``item.a.b[0]`` as a :class:`Reference`.

    Raises:
        ValueError: Not ``item.<path>`` or ``sample.<field>...`` (the message says what is accepted).
    """
    head = text.partition(".")[0]
    bracket = head.find("[")
    namespace = head[:bracket] if bracket != -1 else head
    if namespace not in ("item", "sample"):
        raise ValueError(
            f"{{{{ {text} }}}}: a template reference starts with 'item.' or 'sample.' "
            "(e.g. {{ item.reference_answer }} or {{ sample.output_text }})"
        )
    rest = text[len(namespace) :]
    steps: list[str | int] = []
    position = 0
    while position < len(rest):
        match = _STEP.match(rest, position)
        if match is None:
            raise ValueError(f"{{{{ {text} }}}}: cannot read the path at {rest[position:]!r}")
        key, index, _quote, quoted = match.groups()
        steps.append(int(index) if index is not None else (key if key is not None else quoted))
        position = match.end()
    if not steps:
        raise ValueError(f"{{{{ {text} }}}}: name a field, e.g. {{{{ {namespace}.field }}}}")
    if namespace == "sample" and steps[0] not in SAMPLE_FIELDS:
        raise ValueError(
            f"{{{{ {text} }}}}: sample has {', '.join(sorted(SAMPLE_FIELDS))} "
            f"(output_audio is not supported), not {steps[0]!r}"
        )
    return Reference(text, namespace, tuple(steps))  # type: ignore[arg-type]  # checked above


def render_value(value: JsonValue) -> str:
    """A value as it is written into a template (strings as is, anything else as compact JSON)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Template:
    """A string with ``{{ ... }}`` references, checked when built and rendered in one pass.

    Example:
        >>> t = Template("Q: {{ item.q }} A: {{sample.output_text}}")
        >>> t.render({"q": "2+2?"}, {"output_text": "4"})
        'Q: 2+2? A: 4'
    """

    __slots__ = ("_parts", "references", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        parts: list[str | Reference] = []
        position = 0
        for match in _PLACEHOLDER.finditer(text):
            parts.append(text[position : match.start()])
            parts.append(parse_reference(match.group(1)))
            position = match.end()
        parts.append(text[position:])
        self._parts: tuple[str | Reference, ...] = tuple(p for p in parts if p != "")
        self.references: tuple[Reference, ...] = tuple(p for p in self._parts if isinstance(p, Reference))

    def render(
        self,
        item: Mapping[str, JsonValue],
        sample: Mapping[str, JsonValue],
        sample_filter: Callable[[str], str] | None = None,
    ) -> str:
        """The text with every reference filled in (values are inserted, never re-parsed).

        Args:
            item: The ``item`` namespace.
            sample: The ``sample`` namespace.
            sample_filter: Applied to each inserted ``sample`` value (e.g. escaping tags).

        Raises:
            VariableError: A reference cannot be filled.
        """
        out: list[str] = []
        for part in self._parts:
            if isinstance(part, str):
                out.append(part)
                continue
            text = render_value(part.resolve(item, sample))
            if sample_filter is not None and part.namespace == "sample":
                text = sample_filter(text)
            out.append(text)
        return "".join(out)

    def literal_text(self) -> str:
        """The template without its references (what the grader's author wrote)."""
        return "".join(part for part in self._parts if isinstance(part, str))

    def namespaces(self) -> frozenset[Namespace]:
        return frozenset(ref.namespace for ref in self.references)


def templates_in(values: Sequence[str]) -> list[Template]:
    """Templates for several strings (each checked)."""
    return [Template(v) for v in values]
