"""Prompt templates rendered without ``str.format`` on untrusted text.

Templates use ``{field}`` placeholders and ``{{``/``}}`` for literal braces, as in
OpenJudge. The template is parsed once; values are then inserted verbatim, so a value
that contains ``{``, ``}`` or ``{score}`` can neither break nor alter the prompt. A value
that cannot be sent at all (a lone surrogate has no UTF-8 encoding) is refused when
rendering, before any request is made.

With ``delimit=True`` each value is a data block ``<name>...</name>`` and no value can open
or close a block of the prompt, in any case, spacing or look-alike form
(:mod:`openjudge.models.schema._data_blocks`). A value may also be a :class:`Block` or a
list of them (nested data such as trajectory messages), rendered with the same escaping.
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeAlias

from pydantic import BaseModel, ConfigDict

from openjudge.models.schema._data_blocks import Block, block_names, escape_tags, render_blocks
from openjudge.models.schema.oai.message import ChatMessage, Role

__all__ = ["Block", "CompiledPrompt", "LanguageEnum", "PromptTemplate", "check_sendable", "render_value"]


class LanguageEnum(StrEnum):
    """Prompt language."""

    EN = "en"
    ZH = "zh"


@dataclass(frozen=True, slots=True)
class _Segment:
    literal: str
    field: str | None


_Layout: TypeAlias = tuple[str, tuple[tuple[str, str], ...]]
"""A message's text before its first value, then each value's name and the text after it."""


@dataclass(frozen=True, slots=True)
class _CompiledMessage:
    """One message, parsed: its placeholders in order and the literal text around them.

    Rendering joins a layout's head, then each value followed by the text after it: ``plain``
    for bare values, ``delimited`` when each value sits inside its ``<name>`` tags (the closing
    tag, the next literal and the next opening tag are one string, joined once here).
    """

    role: Role
    fields: tuple[str, ...]
    plain: _Layout
    delimited: _Layout

    @classmethod
    def of(cls, role: Role, segments: Sequence[_Segment]) -> _CompiledMessage:
        fields = tuple(seg.field for seg in segments if seg.field is not None)
        plain, delimited = [""], [""]
        for seg in segments:
            plain[-1] += seg.literal
            delimited[-1] += seg.literal
            if seg.field is not None:
                delimited[-1] += f"<{seg.field}>\n"
                plain.append("")
                delimited.append(f"\n</{seg.field}>")
        return cls(
            role,
            fields,
            (plain[0], tuple(zip(fields, plain[1:], strict=True))),
            (delimited[0], tuple(zip(fields, delimited[1:], strict=True))),
        )


def _compile(content: str, where: str) -> tuple[_Segment, ...]:
    segments: list[_Segment] = []
    try:
        parsed = list(string.Formatter().parse(content))
    except ValueError as exc:
        raise ValueError(
            f"{where}: invalid template ({exc}); write literal braces as '{{{{' and '}}}}'"
        ) from exc
    for literal, field, spec, conversion in parsed:
        if field is not None and (spec or conversion or not field.isidentifier()):
            raise ValueError(
                f"{where}: placeholder {{{field}}} must be a plain name such as {{response}} "
                "(no attribute access, index, conversion or format spec); "
                "write literal braces as '{{' and '}}'"
            )
        if field == "":
            raise ValueError(f"{where}: empty placeholder '{{}}'; name it, e.g. {{response}}")
        segments.append(_Segment(literal, field))
    return tuple(segments)


def _blocks(value: object) -> Sequence[Block] | None:
    if isinstance(value, Block):
        return (value,)
    if isinstance(value, list | tuple) and value and all(isinstance(v, Block) for v in value):
        return value
    return None


def render_value(value: object) -> str:
    """Text for one template value: strings verbatim, blocks as markup, everything else as JSON."""
    if isinstance(value, str):
        return value
    blocks = _blocks(value)
    if blocks is not None:
        return render_blocks(blocks)
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, ensure_ascii=False, default=str)


def check_sendable(field: str, text: str) -> None:
    """Raise ``ValueError`` naming ``field`` if ``text`` has a lone surrogate (it has no UTF-8 form).

    Such text (often from ``surrogateescape`` decoding or a broken JSON escape) would fail
    in the HTTP client on every retry; refusing it here costs no request.
    """
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        char = text[exc.start]
        raise ValueError(
            f"input {field!r} contains a lone surrogate U+{ord(char):04X} at character {exc.start}, "
            "which cannot be sent as UTF-8; clean it first, e.g. "
            "text.encode('utf-8', 'replace').decode('utf-8')"
        ) from None


class CompiledPrompt:
    """A template's messages for one language, parsed once; renders without re-parsing."""

    __slots__ = ("messages", "placeholders", "system_placeholders")

    def __init__(self, messages: tuple[_CompiledMessage, ...]) -> None:
        self.messages = messages
        self.placeholders = frozenset(field for msg in messages for field in msg.fields)
        self.system_placeholders = frozenset(
            field for msg in messages if msg.role in ("system", "developer") for field in msg.fields
        )

    def render(self, values: Mapping[str, object], *, delimit: bool = False) -> list[dict[str, Any]]:
        """Fill the template. Values are inserted verbatim and never re-parsed.

        Args:
            values: Placeholder values; non-strings are rendered as JSON, :class:`Block`
                values as nested data blocks.
            delimit: Wrap each value in ``<name>...</name>`` tags so the judge can tell
                untrusted input from instructions; tags of every block in the prompt are
                escaped inside every value (see :func:`~openjudge.models.schema._data_blocks.escape_tags`).

        Raises:
            KeyError: A placeholder has no value (the message names it).
            ValueError: A value has a lone surrogate (the message names the field).
        """
        names: frozenset[str] | None = None  # the tags to escape, worked out on first need
        out: list[dict[str, Any]] = []
        for msg in self.messages:
            head, slots = msg.delimited if delimit else msg.plain
            parts = [head]
            for field, after in slots:
                try:
                    value = values[field]
                except KeyError:
                    raise KeyError(f"template placeholder {{{field}}} has no value") from None
                if type(value) is str and value.isascii() and (not delimit or "<" not in value):
                    # The common case, inline: ASCII without "<" holds no tag to escape and
                    # nothing unsendable.
                    parts.append(value)
                else:
                    if names is None:
                        names = self._delimited_names(values) if delimit else frozenset()
                    parts.append(_value_text(field, value, names, delimit))
                parts.append(after)
            out.append({"role": msg.role, "content": "".join(parts)})
        return out

    def _delimited_names(self, values: Mapping[str, object]) -> frozenset[str]:
        """Every tag a value must not open or close: the placeholders and any nested blocks'."""
        names = self.placeholders
        for value in values.values():
            if type(value) is not str and (blocks := _blocks(value)) is not None:
                names = names | block_names(blocks)
        return names


def _value_text(field: str, value: object, names: frozenset[str], delimit: bool) -> str:
    """One placeholder's text: the value rendered, and escaped when delimited (the caller wraps it)."""
    if type(value) is str:
        text = escape_tags(value, names) if delimit else value
    else:
        blocks = _blocks(value) if delimit else None
        if blocks is not None:
            text = render_blocks(blocks, names)
        else:
            text = render_value(value)
            if delimit:
                text = escape_tags(text, names)
    check_sendable(field, text)
    return text


class PromptTemplate(BaseModel):
    """A chat prompt per language.

    Args:
        messages: The messages, or a mapping from language to messages.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    messages: list[ChatMessage] | dict[LanguageEnum, list[ChatMessage]]

    def to_messages(self, language: LanguageEnum | None = None) -> list[ChatMessage]:
        """The raw messages for a language (falling back to English, then the first one)."""
        if isinstance(self.messages, list):
            return self.messages
        if language is not None and language in self.messages:
            return self.messages[language]
        if LanguageEnum.EN in self.messages:
            return self.messages[LanguageEnum.EN]
        if not self.messages:
            raise ValueError("PromptTemplate has no messages")
        return next(iter(self.messages.values()))

    def compile(self, language: LanguageEnum | None = None) -> CompiledPrompt:
        """Parse the messages for a language once (callers keep the result)."""
        out = []
        for i, msg in enumerate(self.to_messages(language)):
            if not isinstance(msg.content, str):
                raise ValueError(f"template message {i} must have text content")
            out.append(
                _CompiledMessage.of(msg.role, _compile(msg.content, f"template message {i} ({msg.role})"))
            )
        return CompiledPrompt(tuple(out))

    def placeholders(self, language: LanguageEnum | None = None) -> frozenset[str]:
        """Names of every ``{field}`` in the template."""
        return self.compile(language).placeholders

    def system_placeholders(self, language: LanguageEnum | None = None) -> frozenset[str]:
        """Placeholders that sit in system or developer messages."""
        return self.compile(language).system_placeholders

    def render(
        self,
        values: Mapping[str, object],
        language: LanguageEnum | None = None,
        *,
        delimit: bool = False,
    ) -> list[dict[str, Any]]:
        """Fill the template (see :meth:`CompiledPrompt.render`; compile once to render many)."""
        return self.compile(language).render(values, delimit=delimit)

    def format(self, language: LanguageEnum | None = None, **values: object) -> list[dict[str, Any]]:
        """OpenJudge-compatible spelling of :meth:`render` (no delimiting)."""
        return self.render(values, language)

    @classmethod
    def from_prompt(cls, prompt: str | Sequence[ChatMessage | Mapping[str, Any]]) -> PromptTemplate:
        """Build a template from a user prompt string or a list of messages."""
        if isinstance(prompt, str):
            return cls(messages=[ChatMessage(role="user", content=prompt)])
        msgs = [m if isinstance(m, ChatMessage) else ChatMessage.model_validate(m) for m in prompt]
        return cls(messages=msgs)
