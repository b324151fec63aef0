"""Reading the coding agents' own session transcripts (see ``model.py``)."""

from __future__ import annotations

from .model import AssistantMessage, Entry, TodoItem, TodoList, ToolCall, Transcript, UserMessage

__all__ = [
    "AssistantMessage",
    "Entry",
    "TodoItem",
    "TodoList",
    "ToolCall",
    "Transcript",
    "UserMessage",
]
