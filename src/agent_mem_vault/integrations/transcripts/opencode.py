"""opencode's stored session, read into a :class:`Transcript`.

opencode keeps every session of a machine in one SQLite database under its
data folder, ``$XDG_DATA_HOME/opencode/opencode.db`` (``~/.local/share``
without it), in WAL mode. Tables:

- ``session``: one row per session (``id``, ``directory``, ``time_updated``, ...);
- ``message``: one row per message, ``data`` JSON with ``role`` (``user`` or
  ``assistant``);
- ``part``: the message's parts in order, ``data`` JSON with ``type``: ``text``
  (``synthetic`` when opencode wrote it, not the person), ``tool`` (``tool``:
  ``write``, ``edit``, ``bash``, ``todowrite``, an MCP server's
  ``<server>_<tool>``, ...; ``state`` with ``status``, ``input``, ``output`` and
  ``metadata``), ``reasoning``, ``step-start``, ...;
- ``todo``: the session's todo list as it stands.

After opencode is killed, its last rows are in the ``-wal`` file only. The
database is opened read-only through SQLite itself, which reads the WAL and
never checkpoints it: nothing here writes to opencode's files.
"""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .codex import patch_paths
from .jsonl import MAX_READ_BYTES
from .model import AssistantMessage, Entry, TodoItem, TodoList, Transcript, UserMessage
from .tools import ToolNames, obj

__all__ = ["default_database", "locate", "read"]

CLIENT = "opencode"
BUSY_TIMEOUT_S = 0.5
"""How long to wait for a writer's lock; a session start does not wait longer."""
MAX_BYTES = MAX_READ_BYTES
"""Part data read per session, newest first: the newest work matters most, and a
session start waits for the read."""

TOOLS = ToolNames(
    edit=frozenset({"write", "edit", "multiedit", "patch", "apply_patch"}),
    command=frozenset({"bash"}),
    todo=frozenset({"todowrite"}),
)
_DONE = {"completed", "error"}


def default_database(data_home: Path) -> Path:
    """Where opencode keeps its sessions, given ``$XDG_DATA_HOME`` (or ``~/.local/share``)."""
    return data_home / "opencode" / "opencode.db"


def locate(cwd: str, session_id: str, home: Path) -> str | None:
    """opencode's database as the hook's environment (opencode's own) places it.

    ``$OPENCODE_DB`` names it outright (a bare name is in the data folder);
    else it is ``opencode.db`` in ``$XDG_DATA_HOME/opencode`` (``~/.local/share``).
    Released builds use that name; a development build's channel gets its own
    file, which this does not guess.
    """
    data = os.environ.get("XDG_DATA_HOME")
    folder = (Path(data).expanduser() if data else home / ".local" / "share") / "opencode"
    named = os.environ.get("OPENCODE_DB")
    if named and named != ":memory:":
        path = Path(named).expanduser()
        return str(path if path.is_absolute() else folder / path)
    path = default_database(folder.parent)
    return str(path) if path.exists() else None


def read(locator: str, session_id: str | None = None) -> Transcript:
    """Read session ``session_id`` from the database at ``locator``; never raises.

    Without a session id, the most recently updated session is read (and
    ``problems`` says so).
    """
    problems: list[str] = []
    source = f"{locator}#{session_id}" if session_id else locator
    path = Path(locator)
    if not path.is_file():
        return Transcript(CLIENT, source, session_id, (), (f"no opencode database at {path}",))
    try:
        with closing(_connect(path)) as db:
            session_id = session_id or _latest_session(db, problems)
            if session_id is None:
                return Transcript(CLIENT, source, None, (), tuple(problems))
            entries = _entries(db, session_id, problems)
    except sqlite3.Error as exc:
        problems.append(f"could not read the opencode database {path}: {exc}")
        return Transcript(CLIENT, source, session_id, (), tuple(problems))
    except Exception as exc:  # a reader must never block a session start
        problems.append(f"could not read the opencode database: {type(exc).__name__}: {exc}")
        return Transcript(CLIENT, source, session_id, (), tuple(problems))
    return Transcript(CLIENT, source, session_id, tuple(entries), tuple(problems))


def _connect(path: Path) -> sqlite3.Connection:
    """Read-only through SQLite (WAL included), so opencode's files are never written."""
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    db = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    db.execute("PRAGMA query_only = 1")
    return db


def _latest_session(db: sqlite3.Connection, problems: list[str]) -> str | None:
    row = db.execute(
        "SELECT id FROM session ORDER BY time_updated DESC, id DESC LIMIT 1"
    ).fetchone()
    if row is None:
        problems.append("the opencode database holds no session")
        return None
    problems.append(f"no session id given: read the most recently updated session, {row[0]}")
    return str(row[0])


def _entries(db: sqlite3.Connection, session_id: str, problems: list[str]) -> list[Entry]:
    if db.execute("SELECT 1 FROM session WHERE id = ?", (session_id,)).fetchone() is None:
        problems.append(f"no session {session_id} in the opencode database")
        return []
    roles: dict[str, str] = {}
    for message_id, role in db.execute(
        # SQLite reads the role itself: a damaged row gives no role, not an error.
        "SELECT id, CASE WHEN json_valid(data) THEN json_extract(data, '$.role') END "
        "FROM message WHERE session_id = ? ORDER BY time_created, id",
        (session_id,),
    ):
        roles[str(message_id)] = role if isinstance(role, str) else ""
    rows: list[tuple[Any, Any, Any]] = []
    read = 0
    for row in db.execute(
        "SELECT message_id, id, data FROM part WHERE session_id = ? "
        "ORDER BY time_created DESC, id DESC",
        (session_id,),
    ):
        read += len(row[2]) if isinstance(row[2], str | bytes) else 0
        if read > MAX_BYTES and rows:
            problems.append(
                f"only the newest {MAX_BYTES / 1e6:g} MB of the session's parts were read "
                "(the newest part of the session)"
            )
            break
        rows.append(row)
    order = {m: i for i, m in enumerate(roles)}
    rows.sort(key=lambda r: (order.get(str(r[0]), len(order)), str(r[1])))
    entries: list[Entry] = []
    damaged = unknown = 0
    for message_id, _part_id, data in rows:
        part = _json(data)
        kind = part.get("type")
        if not isinstance(kind, str):
            damaged += 1
        elif kind not in _KNOWN_PARTS:
            unknown += 1
        else:
            entries.extend(_part(roles.get(str(message_id), ""), kind, part))
    if damaged:
        problems.append(f"{damaged} part(s) without a readable type; skipped")
    if unknown:
        problems.append(f"{unknown} part(s) of a kind this reader does not know; skipped")
    todos = _todo_table(db, session_id, problems)
    last = next((e for e in reversed(entries) if isinstance(e, TodoList)), None)
    if todos is not None and todos.items and todos != last:
        entries.append(todos)
    return entries


_KNOWN_PARTS = {
    "text",
    "tool",
    "reasoning",
    "file",
    "step-start",
    "step-finish",
    "snapshot",
    "patch",
    "agent",
    "subtask",
    "retry",
    "compaction",
}
"""Part types opencode writes; only ``text`` and ``tool`` say what a handoff needs."""


def _json(data: Any) -> dict[str, Any]:
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    if not isinstance(data, str):
        return {}
    try:
        value = json.loads(data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _part(role: str, kind: str, part: dict[str, Any]) -> list[Entry]:
    if kind == "text":
        text = part.get("text")
        if not isinstance(text, str) or not text.strip() or part.get("synthetic"):
            return []  # synthetic text is opencode's own (file attachments, reminders)
        if part.get("ignored"):
            return []
        if role == "user":
            return [UserMessage(text.strip())]
        if role == "assistant":
            return [AssistantMessage(text.strip())]
        return []
    if kind == "tool":
        return _tool(part)
    return []


def _tool(part: dict[str, Any]) -> list[Entry]:
    name = str(part.get("tool") or "?")
    state = obj(part.get("state"))
    status = state.get("status")
    finished = status in _DONE
    args = obj(state.get("input"))
    return TOOLS.entries(
        name,
        args,
        finished=finished,
        todo_text=("content",),
        edited=lambda: _edited_paths(args, state),
        exit_status=lambda: _exit_code(state),
    )


def _exit_code(state: dict[str, Any]) -> int | None:
    code = obj(state.get("metadata")).get("exit")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _edited_paths(args: dict[str, Any], state: dict[str, Any]) -> tuple[str, ...]:
    path = args.get("filePath") or args.get("file_path") or args.get("path")
    if isinstance(path, str) and path:
        return (path,)
    patch = args.get("patchText") or args.get("patch") or args.get("input")
    # The same apply_patch format as codex writes: one reader for both.
    return patch_paths(patch) if isinstance(patch, str) else ()


def _todo_table(db: sqlite3.Connection, session_id: str, problems: list[str]) -> TodoList | None:
    """The todo list as opencode last stored it (its ``todo`` table)."""
    try:
        rows = db.execute(
            "SELECT content, status FROM todo WHERE session_id = ? ORDER BY position",
            (session_id,),
        ).fetchall()
    except sqlite3.Error as exc:
        problems.append(f"could not read the todo list: {exc}")
        return None
    return TodoList(tuple(TodoItem(str(c or ""), str(s or "")) for c, s in rows))
