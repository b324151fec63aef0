"""Gemini CLI's recorded chat, read into a :class:`Transcript`.

Gemini CLI records each session under its home as
``.gemini/tmp/<project>/chats/session-<date>-<id8>.jsonl`` (the hook input's
``transcript_path``), appending as the session goes:

- a header line: ``sessionId``, ``projectHash``, ``startTime``, ``kind``;
- ``{"$set": {...}}`` lines that patch the conversation: ``lastUpdated``, or
  ``messages``, the whole message list set anew (the first one holds the
  workspace context Gemini CLI builds itself);
- one line per message record: ``id``, ``type`` (``user``, ``gemini``,
  ``info``, ``error``, ...), ``content``; a ``gemini`` record's ``toolCalls``,
  each with ``name``, ``args``, ``status`` and ``result`` (the
  ``functionResponse`` parts sent back to the model; a shell call's output
  ends with ``Exit Code: N``);
- a record written again under the same ``id`` when it changes: the last
  version wins, in the place of the first.

Quirks that matter here. A model turn is written when its answer arrives, and
written again with its ``toolCalls`` only once they have all finished: a
session killed while a call runs leaves a last turn with neither text nor
calls, and nothing on disk names the call. Hook output reaches the model
inside the person's turn, as a ``<hook_context>`` block, and is not their
words. A kill can cut the last line short. Older releases wrote one JSON
document with a ``messages`` array; it reads the same.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .jsonl import MAX_READ_BYTES
from .model import AssistantMessage, Entry, ToolCall, Transcript, UserMessage
from .tools import ToolNames, obj

__all__ = ["UNRECORDED", "find", "locate", "read", "search_root"]

CLIENT = "gemini-cli"
MAX_BYTES = MAX_READ_BYTES
"""A chat file larger than this is read from its end: the newest work matters most,
and a session start waits for the read."""

TOOLS = ToolNames(
    edit=frozenset({"write_file", "replace", "edit", "smart_edit"}),
    command=frozenset({"run_shell_command", "shell"}),
    todo=frozenset({"write_todos"}),
)
_DONE = {"success", "error", "cancelled"}
_EXIT = re.compile(r"Exit Code: (-?\d+)")
_INJECTED = re.compile(r"<(hook_context|session_context)>.*?</\1>", re.DOTALL)
"""What Gemini CLI adds to a user turn itself: hook output, the workspace context."""
UNRECORDED = "a tool call Gemini CLI had not recorded yet"
"""The tool name of a call the session was running when it stopped, where the file has none."""


def locate(cwd: str, session_id: str, home: Path) -> str | None:
    """The newest chat file named for ``session_id`` (its first 8 characters) in any
    project folder: the hook input's ``transcript_path`` says it where Gemini CLI gives one."""
    return find(search_root(cwd, home), session_id)


def search_root(cwd: str, home: Path) -> str:
    """Gemini CLI's ``tmp`` folder, as the hook's environment places it; no file is looked
    at (the chat file is searched for only once the session is dead: :func:`find`)."""
    from ..gemini_trust import gemini_dir

    return str(gemini_dir(home) / "tmp")


def find(root: str, session_id: str) -> str | None:
    """The newest chat file named for ``session_id`` in any project folder under ``root``."""
    found = sorted(
        Path(root).glob(f"*/chats/session-*-{session_id[:8]}.jsonl"),
        key=lambda p: p.stat().st_mtime_ns,
    )
    return str(found[-1]) if found else None


def read(locator: str, session_id: str | None = None) -> Transcript:
    """Read the chat file at ``locator``; never raises (what failed is in ``problems``)."""
    problems: list[str] = []
    try:
        records = _records(Path(locator), problems)
        entries = _entries(records, problems)
    except Exception as exc:  # a reader must never block a session start
        return Transcript(CLIENT, locator, session_id, (), (*problems, _unreadable(exc)))
    return Transcript(CLIENT, locator, session_id, tuple(entries), tuple(problems))


def _unreadable(exc: BaseException) -> str:
    return f"could not read the chat file: {type(exc).__name__}: {exc}"


def _records(path: Path, problems: list[str]) -> list[dict[str, Any]]:
    """The message records, each at the place its id first appeared, in its last version."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            start = max(0, size - MAX_BYTES)
            handle.seek(start)
            raw = handle.read()
    except FileNotFoundError:
        problems.append(f"no chat file at {path}")
        return []
    except OSError as exc:
        problems.append(f"could not open the chat file {path}: {exc.strerror or exc}")
        return []
    if start:
        raw = raw[raw.find(b"\n") + 1 :]
        problems.append(
            f"only the last {MAX_BYTES / 1e6:g} MB of {size / 1e6:.1f} MB were read "
            "(the newest part of the session)"
        )
    whole = _whole_document(raw)
    if whole is not None:
        return whole
    by_id: dict[str, dict[str, Any]] = {}
    lines = raw.split(b"\n")
    unknown = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            if number == len(lines):
                problems.append("the last line is cut short (the session stopped mid-write)")
            else:
                problems.append(f"line {number} is not JSON; skipped")
            continue
        if not isinstance(record, dict):
            unknown += 1
        elif "$set" in record:
            patch = record["$set"]
            messages = patch.get("messages") if isinstance(patch, dict) else None
            if isinstance(messages, list):  # the whole message list, set anew
                by_id = {}
                for message in messages:
                    _upsert(by_id, message)
        elif "sessionId" in record and "type" not in record:
            continue  # the header: nothing a handoff needs
        elif not _upsert(by_id, record):
            unknown += 1
    if unknown:
        problems.append(f"{unknown} line(s) of a kind this reader does not know; skipped")
    return list(by_id.values())


def _upsert(by_id: dict[str, dict[str, Any]], record: Any) -> bool:
    """A message record, replacing an earlier version in its place; False if it is not one."""
    if not isinstance(record, dict):
        return False
    key, kind = record.get("id"), record.get("type")
    if not isinstance(key, str) or not isinstance(kind, str):
        return False
    by_id[key] = record
    return True


def _whole_document(raw: bytes) -> list[dict[str, Any]] | None:
    """The messages of a chat file written as one JSON document, else None."""
    first = raw.lstrip().split(b"\n", 1)[0].strip()
    if first != b"{" and b'"messages"' not in first:
        return None  # JSON lines: the first line is a whole header object
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    messages = data.get("messages") if isinstance(data, dict) else None
    if not isinstance(messages, list):
        return None
    return [m for m in messages if isinstance(m, dict)]


def _entries(records: list[dict[str, Any]], problems: list[str]) -> list[Entry]:
    entries: list[Entry] = []
    for record in records:
        kind = record.get("type")
        if kind == "user":
            text = _INJECTED.sub("", _text(record.get("content"))).strip()
            if text:
                entries.append(UserMessage(text))
        elif kind == "gemini":
            text = _text(record.get("content"))
            if text:
                entries.append(AssistantMessage(text))
            calls = record.get("toolCalls")
            for call in calls if isinstance(calls, list) else []:
                if isinstance(call, dict):
                    entries.extend(_tool_call(call))
    last = records[-1] if records else {}
    if (
        last.get("type") == "gemini"
        and not _text(last.get("content"))
        and not last.get("toolCalls")
    ):
        # Gemini CLI writes a model turn's tool calls only once they have finished:
        # a last turn with neither text nor calls was running a call when the
        # session stopped, and the file does not say which.
        entries.append(ToolCall(UNRECORDED, "other", finished=False))
    return entries


def _text(content: Any) -> str:
    """The text of a record's content: a string, or parts with ``text`` (tool parts left out)."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    texts = [
        part["text"]
        for part in content
        if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought")
    ]
    return "\n".join(texts).strip()


def _tool_call(call: dict[str, Any]) -> list[Entry]:
    name = str(call.get("name") or "?")
    args = obj(call.get("args"))
    status = call.get("status")
    finished = status in _DONE if isinstance(status, str) else bool(call.get("result"))
    return TOOLS.entries(
        name,
        args,
        finished=finished,
        todo_text=("description", "content"),
        edited=lambda: _edited_paths(args),
        exit_status=lambda: _exit_status(call) if finished else None,
    )


def _edited_paths(args: dict[str, Any]) -> tuple[str, ...]:
    path = args.get("file_path") or args.get("absolute_path") or args.get("path")
    return (path,) if isinstance(path, str) and path else ()


def _exit_status(call: dict[str, Any]) -> int | None:
    """The exit status Gemini CLI's shell tool reports in its output (``Exit Code: N``,
    left out when it is 0), where the call has output."""
    for text in _strings(call.get("result")):
        found = _EXIT.search(text)
        if found:
            return int(found.group(1))
    return 0 if call.get("status") == "success" and call.get("result") else None


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a JSON value (the output is nested in functionResponse parts)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
