"""Transcript messages: what the members of a thread see, and what a model is given.

A message is a role plus parts, as the harness design's session view renders them
(``message.parts`` with ``part.type == 'text'``). The JSON form written to the
log and sent over HTTP uses the harness design's wire names (``tool-call``,
``toolCallId``, ``mediaType``); ``metadata.harness.*`` carries who wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..core.errors import InvalidInputError

__all__ = [
    "FilePart",
    "Message",
    "Part",
    "Role",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "part_from_json",
]

Role = Literal["system", "user", "assistant", "tool"]
_ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str
    type: Literal["text"] = "text"

    def to_json(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """A model (or the harness on its behalf) asks for a tool to run."""

    id: str
    name: str
    arguments: Mapping[str, Any]
    type: Literal["tool-call"] = "tool-call"

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "tool-call",
            "id": self.id,
            "name": self.name,
            "arguments": dict(self.arguments),
        }


@dataclass(frozen=True, slots=True)
class ToolResultPart:
    """The answer to one tool call, matched by ``tool_call_id``."""

    tool_call_id: str
    name: str
    output: Any
    is_error: bool = False
    type: Literal["tool-result"] = "tool-result"

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": "tool-result",
            "toolCallId": self.tool_call_id,
            "name": self.name,
            "output": self.output,
        }
        if self.is_error:
            body["isError"] = True
        return body


@dataclass(frozen=True, slots=True)
class FilePart:
    """A media file: inline base64 ``data`` or a ``url`` the host can read."""

    media_type: str
    data: str | None = None
    url: str | None = None
    name: str | None = None
    type: Literal["file"] = "file"

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"type": "file", "mediaType": self.media_type}
        for key in ("data", "url", "name"):
            value = getattr(self, key)
            if value is not None:
                body[key] = value
        return body


Part = TextPart | ToolCallPart | ToolResultPart | FilePart


def part_from_json(raw: Mapping[str, Any]) -> Part:
    kind = raw.get("type")
    try:
        if kind == "text":
            return TextPart(text=str(raw["text"]))
        if kind == "tool-call":
            return ToolCallPart(
                id=str(raw["id"]), name=str(raw["name"]), arguments=dict(raw.get("arguments") or {})
            )
        if kind == "tool-result":
            return ToolResultPart(
                tool_call_id=str(raw["toolCallId"]),
                name=str(raw.get("name", "")),
                output=raw.get("output"),
                is_error=bool(raw.get("isError", False)),
            )
        if kind == "file":
            return FilePart(
                media_type=str(raw["mediaType"]),
                data=raw.get("data"),
                url=raw.get("url"),
                name=raw.get("name"),
            )
    except KeyError as exc:
        raise InvalidInputError(f"message part of type {kind!r} lacks {exc.args[0]!r}") from None
    raise InvalidInputError(
        f"unknown message part type {kind!r}; use text, tool-call, tool-result or file"
    )


@dataclass(frozen=True, slots=True)
class Message:
    """One transcript message. ``agent`` is the root agent that wrote it (None: main model)."""

    id: str
    role: Role
    parts: tuple[Part, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)
    created_at: str | None = None

    @property
    def agent(self) -> str | None:
        harness = self.metadata.get("harness")
        if isinstance(harness, Mapping):
            agent = harness.get("agent")
            return agent if isinstance(agent, str) else None
        return None

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCallPart))

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id,
            "role": self.role,
            "parts": [p.to_json() for p in self.parts],
            "metadata": _plain(self.metadata),
        }
        if self.role == "assistant":
            body["agent"] = self.agent
        if self.created_at is not None:
            body["createdAt"] = self.created_at
        return body

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Message:
        role = raw.get("role")
        if role not in _ROLES:
            raise InvalidInputError(
                f"message role must be one of {', '.join(_ROLES)}, got {role!r}"
            )
        parts = raw.get("parts")
        if not isinstance(parts, Sequence) or isinstance(parts, str):
            raise InvalidInputError("message parts must be a list")
        return cls(
            id=str(raw.get("id", "")),
            role=role,
            parts=tuple(part_from_json(p) for p in parts),
            metadata=dict(raw.get("metadata") or {}),
            created_at=raw.get("createdAt"),
        )


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
