"""Reading the coding agents' own session transcripts (see ``model.py``).

One reader module per client, imported only when a transcript of that client
is read (a session start must stay fast). A reader module exposes

* ``read(locator: str, session_id: str | None) -> Transcript``, which never
  raises: what cannot be read becomes a line in ``Transcript.problems``;
* optionally ``locate(cwd: str, session_id: str, home: Path) -> str | None``,
  where the client keeps a session's transcript when its hook input does not
  say (the client's own on-disk layout).

>>> t = read_transcript("claude-code", "/home/me/.claude/projects/-src-app/abc.jsonl", "abc")
>>> [type(e).__name__ for e in t.entries]  # doctest: +SKIP
['UserMessage', 'ToolCall', 'AssistantMessage']
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from .model import (
    CLIENTS,
    AssistantMessage,
    Entry,
    TodoItem,
    TodoList,
    ToolCall,
    Transcript,
    UserMessage,
    is_vault_handoff_tool,
)

__all__ = [
    "CLIENTS",
    "READERS",
    "AssistantMessage",
    "Entry",
    "TodoItem",
    "TodoList",
    "ToolCall",
    "Transcript",
    "UserMessage",
    "is_vault_handoff_tool",
    "locate_transcript",
    "read_transcript",
]

READERS: dict[str, str] = {
    "claude-code": f"{__name__}.claude_code",
    "codex": f"{__name__}.codex",
    "gemini-cli": f"{__name__}.gemini_cli",
    "opencode": f"{__name__}.opencode",
}
"""Client name → the module that reads its transcripts."""


def _reader(client: str) -> tuple[ModuleType | None, str | None]:
    """The reader module of ``client``, or None and why not."""
    module = READERS.get(client)
    if module is None:
        return None, f"no transcript reader for client {client!r} (known: {', '.join(READERS)})"
    try:
        return importlib.import_module(module), None
    except ImportError as exc:
        return None, f"the transcript reader for {client} is not available ({exc})"


def read_transcript(client: str, locator: str | None, session_id: str | None) -> Transcript:
    """The transcript of a session of ``client``; never raises (see ``Transcript.problems``)."""
    module, why = _reader(client)
    if module is None or not locator:
        problem = why or f"no transcript location is known for this {client} session"
        return Transcript(client, locator or "", session_id, problems=(problem,))
    try:
        transcript = module.read(locator, session_id)
    except Exception as exc:  # a reader bug must not block a session start
        return Transcript(
            client, locator, session_id, problems=(f"the {client} reader failed: {exc!r}",)
        )
    assert isinstance(transcript, Transcript)
    return transcript


def locate_transcript(client: str, cwd: str, session_id: str, home: Path) -> str | None:
    """Where ``client`` keeps ``session_id``'s transcript, by its own layout; None if unknown."""
    module, _ = _reader(client)
    locate = getattr(module, "locate", None)
    if locate is None:
        return None
    try:
        found = locate(cwd, session_id, home)
    except Exception:  # a lookup that fails is a location we do not know
        return None
    return found if isinstance(found, str) else None
