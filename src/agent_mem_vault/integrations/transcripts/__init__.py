"""Reading the coding agents' own session transcripts (see ``model.py``).

One reader module per client, imported only when a transcript of that client
is read (a session start must stay fast). A reader module exposes

* ``read(locator: str, session_id: str | None) -> Transcript``, which never
  raises: what cannot be read becomes a line in ``Transcript.problems``;
* optionally ``locate(cwd: str, session_id: str, home: Path) -> str | None``,
  where the client keeps a session's transcript when its hook input does not
  say (the client's own on-disk layout);
* optionally, where that lookup is a search (a glob over every session the
  client kept), ``search_root(cwd, home) -> str``, which only names the folder
  to search (from the hook's environment, looking at no file), and
  ``find(root, session_id) -> str | None``, the search itself. A session start
  records the folder (:func:`locate_at_start`); the search runs once the
  session is dead and its transcript is read (:func:`find_transcript`).

>>> t = read_transcript("claude-code", "/home/me/.claude/projects/-src-app/abc.jsonl", "abc")
>>> [type(e).__name__ for e in t.entries]  # doctest: +SKIP
['UserMessage', 'ToolCall', 'AssistantMessage']
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from . import model
from .model import *  # noqa: F403  (its __all__, below)
from .model import Transcript

__all__ = ["READERS", "find_transcript", "locate_at_start", "locate_transcript", "read_transcript"]
# Every value of a transcript, as model.py lists them.
__all__ += model.__all__

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


def locate_at_start(
    client: str, cwd: str, session_id: str, home: Path
) -> tuple[str | None, str | None]:
    """At a session start: (the transcript's location, or None; where to search for it later).

    A start must stay fast and most sessions are never handed off, so a
    reader's search (``search_root``/``find``) is not run here: only the
    folder is recorded, read from the hook's environment.
    """
    module, _ = _reader(client)
    root = getattr(module, "search_root", None)
    if root is None or getattr(module, "find", None) is None:
        return locate_transcript(client, cwd, session_id, home), None
    try:
        found = root(cwd, home)
    except Exception:  # a folder that cannot be named is a location we do not know
        return None, None
    return None, found if isinstance(found, str) else None


def find_transcript(client: str, root: str | None, session_id: str | None) -> str | None:
    """Search ``root`` (from :func:`locate_at_start`) for ``session_id``'s transcript; None if
    not found or the client has no search."""
    module, _ = _reader(client)
    find = getattr(module, "find", None)
    if find is None or not root or not session_id:
        return None
    try:
        found = find(root, session_id)
    except Exception:  # a search that fails is a location we do not know
        return None
    return found if isinstance(found, str) else None
