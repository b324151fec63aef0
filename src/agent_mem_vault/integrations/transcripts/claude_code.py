"""Claude Code's session transcript: ``~/.claude/projects/<cwd>/<session_id>.jsonl``.

One JSON object per line. ``user`` and ``assistant`` records carry an
Anthropic ``message``: the assistant's ``text`` and ``tool_use`` blocks
(``Write``/``Edit``/``MultiEdit``/``NotebookEdit`` with ``file_path``, ``Bash``
with ``command``, ``TodoWrite`` with ``todos``), the user's typed text and the
``tool_result`` blocks that answer tool calls. Everything else (summaries,
snapshots, system lines, records of types not known here) is bookkeeping and
is skipped. Text the client or a hook injected into a user turn (``isMeta``,
``<command-…>``, ``<system-reminder>``) is not a request the person typed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .jsonl import read_jsonl
from .model import AssistantMessage, Entry, TodoList, ToolCall, Transcript, UserMessage
from .tools import ToolNames, todo_list

__all__ = ["locate", "read"]

CLIENT = "claude-code"
TOOLS = ToolNames(
    edit=frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"}),
    command=frozenset({"Bash"}),
    todo=frozenset({"TodoWrite"}),
)
_INJECTED = re.compile(r"^\s*<(command-|local-command|system-reminder|bash-|user-prompt-submit)")
_EXIT = re.compile(r"exit code[: ]+(-?\d+)", re.IGNORECASE)


def locate(cwd: str, session_id: str, home: Path) -> str | None:
    """Claude Code's layout: the folder is the cwd with every non-alphanumeric as ``-``."""
    folder = re.sub(r"[^A-Za-z0-9]", "-", str(Path(cwd).resolve()))
    path = home / ".claude" / "projects" / folder / f"{session_id}.jsonl"
    return str(path) if path.exists() else None


def read(locator: str, session_id: str | None) -> Transcript:
    problems: list[str] = []
    entries: list[Entry] = []
    calls: dict[str, int] = {}  # tool_use id -> index in entries
    for record in read_jsonl(locator, problems, keep=_may_be_a_turn):
        kind = record.get("type")
        message = record.get("message")
        if kind not in ("user", "assistant") or not isinstance(message, dict):
            continue
        if session_id is None and isinstance(record.get("sessionId"), str):
            session_id = record["sessionId"]
        if kind == "assistant":
            _assistant(message.get("content"), entries, calls)
        elif not record.get("isMeta") and not record.get("isCompactSummary"):
            _user(message.get("content"), record, entries, calls)
    return Transcript(CLIENT, locator, session_id, tuple(entries), tuple(problems))


def _may_be_a_turn(raw: bytes) -> bool:
    """False for lines that surely are no ``user``/``assistant`` record (most bookkeeping).

    Inside a JSON string every quote is escaped, so ``"type":"attachment"`` as
    raw bytes is the record's own type (attachments carry whole system prompts,
    the bulk of the file), never text someone wrote.
    """
    if raw.startswith(b'{"type":"api-request') or b'"type":"attachment"' in raw:
        return False
    return b'"user"' in raw or b'"assistant"' in raw


def _assistant(content: Any, entries: list[Entry], calls: dict[str, int]) -> None:
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and str(block.get("text", "")).strip():
            entries.append(AssistantMessage(str(block["text"]).strip()))
        elif block.get("type") == "tool_use" and isinstance(block.get("name"), str):
            raw = block.get("input")
            args: dict[str, Any] = raw if isinstance(raw, dict) else {}
            if TOOLS.is_todo(block["name"]):
                entries.append(_todos(args))
                continue
            if isinstance(block.get("id"), str):
                calls[block["id"]] = len(entries)
            entries.append(_call(block["name"], args))


def _call(name: str, args: dict[str, Any]) -> ToolCall:
    kind = TOOLS.kind(name)
    paths: tuple[str, ...] = ()
    command = None
    if kind == "edit":
        path = args.get("file_path") or args.get("notebook_path")
        paths = (str(path),) if path else ()
    elif kind == "command":
        command = str(args.get("command", ""))
    return ToolCall(name, kind, paths, command, finished=False)


def _todos(args: dict[str, Any]) -> TodoList:
    found = todo_list(args.get("todos"), ("content",), default_status="pending", need_text=True)
    return found or TodoList(())


def _user(
    content: Any, record: dict[str, Any], entries: list[Entry], calls: dict[str, int]
) -> None:
    if isinstance(content, str):
        if _typed(content):
            entries.append(UserMessage(content.strip()))
        return
    texts = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            _finish(block, record, entries, calls)
        elif block.get("type") == "text" and _typed(block.get("text")):
            texts.append(str(block["text"]).strip())
    if texts:
        entries.append(UserMessage("\n".join(texts)))


def _finish(
    block: dict[str, Any], record: dict[str, Any], entries: list[Entry], calls: dict[str, int]
) -> None:
    """Mark the call a ``tool_result`` answers as finished, with its exit status."""
    index = calls.pop(str(block.get("tool_use_id")), None)
    if index is None:
        return
    call = entries[index]
    assert isinstance(call, ToolCall)
    status = None
    if call.kind == "command":
        status = 0
        if block.get("is_error"):
            match = _EXIT.search(_text(block.get("content")))
            status = int(match.group(1)) if match else 1
        result = record.get("toolUseResult")
        if isinstance(result, dict) and result.get("interrupted"):
            status = None
    entries[index] = ToolCall(call.tool, call.kind, call.paths, call.command, status, True)


def _typed(text: Any) -> bool:
    """Text the person typed, not text the client or a hook put into the user turn."""
    return isinstance(text, str) and bool(text.strip()) and not _INJECTED.match(text)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""
