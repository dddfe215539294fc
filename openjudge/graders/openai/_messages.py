"""A model grader's prompt messages, rendered for a chat judge: text, image and audio parts.

OpenAI's grader messages hold one part or a list of parts (``input_text``, ``output_text``,
``input_image``, ``input_audio``, plain strings), each able to carry ``{{ ... }}``
templates. A chat judge receives them in the chat-completions format:

* a message of text parts only: one string, the parts joined (as OpenAI writes them);
* a message with an image or audio part: a list of parts, adjacent text joined into one
  ``{"type": "text"}`` part, an image as ``{"type": "image_url", "image_url": {"url",
  "detail"}}``, audio as ``{"type": "input_audio", "input_audio": {"data", "format"}}``.

An image held in OpenAI's file store (``file_id`` without ``image_url``) cannot be
fetched from here and is refused when the grader is built.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import JsonValue

from openjudge.graders.openai._spec import InputAudioPart, InputImagePart, MessageSpec
from openjudge.graders.openai._templates import Template, template_at
from openjudge.models.schema._data_blocks import escape_tags

__all__ = ["PromptMessage"]

_TAG = re.compile(r"<\s*/?\s*([A-Za-z][\w.-]*)")


@dataclass(frozen=True, slots=True)
class _Image:
    url: Template
    detail: str | None


@dataclass(frozen=True, slots=True)
class _Audio:
    data: Template
    format: str


class PromptMessage:
    """One prompt message with its parts compiled (templates checked when built).

    ``where`` is the message's path in the grader JSON (``input[1]``), for messages.

    Raises:
        ValueError: An image part names only an OpenAI ``file_id``, or a template is malformed.
    """

    def __init__(self, spec: MessageSpec, where: str) -> None:
        self.role = "system" if spec.role == "developer" else spec.role
        parts: list[Template | _Image | _Audio] = []
        for index, part in enumerate(spec.content):
            if isinstance(part, InputImagePart):
                if part.image_url is None:
                    raise ValueError(
                        f"{where}.content[{index}]: an input_image with file_id {part.file_id!r} is in "
                        "OpenAI's file store, which openjudge cannot reach: give its image_url (a URL or a "
                        "data: URL)"
                    )
                parts.append(
                    _Image(template_at(part.image_url, f"{where}.content[{index}].image_url"), part.detail)
                )
            elif isinstance(part, InputAudioPart):
                data = template_at(part.input_audio.data, f"{where}.content[{index}].input_audio.data")
                parts.append(_Audio(data, part.input_audio.format))
            else:
                text = part if isinstance(part, str) else part.text
                parts.append(template_at(text, f"{where}.content[{index}]"))
        self._parts = tuple(parts)
        self.media: frozenset[Literal["image", "audio"]] = frozenset(
            "image" if isinstance(p, _Image) else "audio" for p in parts if not isinstance(p, Template)
        )
        literal = "".join(p.literal_text() for p in parts if isinstance(p, Template))
        self.tags = frozenset(m.group(1).lower() for m in _TAG.finditer(literal))
        """Tags the author's text uses (``<answer>``): escaped inside inserted response text."""

    def render(
        self, item: Mapping[str, JsonValue], sample: Mapping[str, JsonValue], tags: frozenset[str]
    ) -> dict[str, Any]:
        """The message in chat-completions form (raises :class:`~._templates.VariableError`)."""
        escape = (lambda text: escape_tags(text, tags)) if tags else None
        if not self.media:
            text = "".join(p.render(item, sample, escape) for p in self._parts if isinstance(p, Template))
            return {"role": self.role, "content": text}
        content: list[dict[str, Any]] = []
        texts: list[str] = []
        for part in self._parts:
            if isinstance(part, Template):
                texts.append(part.render(item, sample, escape))
                continue
            if "".join(texts):
                content.append({"type": "text", "text": "".join(texts)})
            texts = []
            if isinstance(part, _Image):
                image: dict[str, str] = {"url": part.url.render(item, sample)}
                if part.detail is not None:
                    image["detail"] = part.detail
                content.append({"type": "image_url", "image_url": image})
            else:
                audio = {"data": part.data.render(item, sample), "format": part.format}
                content.append({"type": "input_audio", "input_audio": audio})
        if "".join(texts):
            content.append({"type": "text", "text": "".join(texts)})
        return {"role": self.role, "content": content}
