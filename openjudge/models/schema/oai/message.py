"""OpenAI-format chat messages."""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, JsonValue

__all__ = ["ChatMessage", "Role"]

Role: TypeAlias = Literal["system", "developer", "user", "assistant", "tool"]


class ChatMessage(BaseModel):
    """One chat message in OpenAI's wire format.

    ``content`` is text or a list of content parts (``{"type": "text", "text": ...}``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    role: Role
    content: str | list[dict[str, JsonValue]] | None = None
    name: str | None = None
    tool_calls: list[dict[str, JsonValue]] | None = None
    tool_call_id: str | None = None

    def text(self) -> str:
        """The message's text: the content string, or its text parts joined."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        parts = [p.get("text") for p in self.content if p.get("type") == "text"]
        return "".join(p for p in parts if isinstance(p, str))

    def to_wire(self) -> dict[str, Any]:
        """The dict the chat-completions API expects (unset fields left out)."""
        return self.model_dump(exclude_none=True)
