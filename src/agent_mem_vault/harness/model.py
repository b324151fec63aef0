"""The model protocol: what the harness asks of a chat model, and nothing more.

A model gets one request (system prompts, transcript, tool specs, the provider
keys of the user who sent the turn) and streams back text deltas, complete
tool calls and usage. Adapters (OpenAI-compatible endpoints, the scripted test
model) implement ``Model``; the harness never sees a provider SDK.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .messages import Message

__all__ = [
    "Model",
    "ModelEvent",
    "ModelRequest",
    "TextDelta",
    "ToolCallRequest",
    "ToolSpec",
    "Usage",
    "UsageReport",
]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as a model sees it: name, description and a JSON Schema for its input."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    system_prompts: tuple[str, ...]
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    model: str | None = None
    """The model name to ask for, when the adapter serves several."""
    keys: Mapping[str, str] = field(default_factory=dict)
    """Provider keys of the user who sent the turn (e.g. ``{"openai": "sk-…"}``)."""


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """A complete tool call (adapters assemble streamed fragments before yielding)."""

    id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens
        )


@dataclass(frozen=True, slots=True)
class UsageReport:
    usage: Usage


ModelEvent = TextDelta | ToolCallRequest | UsageReport


@runtime_checkable
class Model(Protocol):
    """A chat model. ``name`` is shown in logs and usage records."""

    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Answer one request; the iterator ends when the model's reply is complete."""
        ...
