"""What a coding agent's transcript says, in one shape for every client.

Each client writes its session to disk in its own format (Claude Code's and
Codex's JSONL, Gemini CLI's recorded chat, opencode's SQLite store). A reader
per client turns that into a :class:`Transcript`: the entries in the order the
session made them. Everything that decides what an automatic handoff says
works on this shape only, so a new client needs a reader and nothing else.

Readers never raise on a changed or damaged format: an unknown record is
skipped, a last line cut by a kill is ignored, a missing file is an empty
transcript with ``problems`` saying why. A session start must never be
blocked by what a dead session left behind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "CLIENTS",
    "AssistantMessage",
    "Entry",
    "TodoItem",
    "TodoList",
    "ToolCall",
    "Transcript",
    "UserMessage",
    "is_vault_handoff_tool",
]

CLIENTS = ("claude-code", "codex", "gemini-cli", "opencode")
"""The clients whose transcripts can be read, by the name sessions record."""

ToolKind = Literal["edit", "command", "handoff", "other"]
"""``edit``: wrote or changed a file. ``command``: ran a shell command.
``handoff``: the vault's own ``create_handoff`` tool (an explicit handoff).
``other``: anything else (reads, searches, other MCP tools)."""


@dataclass(frozen=True)
class UserMessage:
    """A request the person typed (not tool results, not hook output the client injected)."""

    text: str


@dataclass(frozen=True)
class AssistantMessage:
    """Text the model showed the person (not its hidden reasoning)."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model made, and what became of it.

    ``finished`` is False when the transcript has the call but no result: the
    session stopped while it ran ("interrupted while running ...").
    """

    tool: str
    """The client's own tool name: ``Bash``, ``Edit``, ``exec_command``, ``write``, ..."""
    kind: ToolKind
    paths: tuple[str, ...] = ()
    """Files an ``edit`` call wrote or changed, as the client named them."""
    command: str | None = None
    """The shell command of a ``command`` call."""
    exit_status: int | None = None
    """A finished command's exit status, where the client records it."""
    finished: bool = True


@dataclass(frozen=True)
class TodoItem:
    text: str
    status: str
    """The client's own word: ``pending``, ``in_progress``, ``completed``, ..."""


@dataclass(frozen=True)
class TodoList:
    """The plan or todo list as the client last recorded it at this point."""

    items: tuple[TodoItem, ...]


Entry = UserMessage | AssistantMessage | ToolCall | TodoList


@dataclass(frozen=True)
class Transcript:
    """A session's transcript as read: its entries in order, and what could not be read."""

    client: str
    """``claude-code``, ``codex``, ``gemini-cli`` or ``opencode``."""
    source: str
    """Where it was read from (a file path, or the store and session id)."""
    session_id: str | None = None
    entries: tuple[Entry, ...] = ()
    problems: tuple[str, ...] = field(default=())
    """Why parts could not be read (missing file, damaged lines, unknown records), one line each."""


def is_vault_handoff_tool(name: str, namespace: str | None = None) -> bool:
    """True for this vault's ``create_handoff`` tool as any client names it.

    Clients prefix MCP tools with the server's name in their own way
    (``mcp__agent-mem-vault__create_handoff``, ``agent_mem_vault__create_handoff``,
    a Codex namespace ``mcp__agent_mem_vault`` holding ``create_handoff``), so
    the server's name is looked for in the tool's name and its namespace together.
    A bare ``create_handoff`` (Gemini CLI's name for an MCP tool no other server
    offers) counts too.
    """
    if name == "create_handoff":
        return True
    where = f"{namespace or ''} {name}".lower().replace("_", "-")
    return name.endswith("create_handoff") and "agent-mem-vault" in where
