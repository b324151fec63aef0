"""Codex's rollout: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<session_id>.jsonl``.

One ``{"timestamp", "type", "payload"}`` object per line, flushed at each
step. What the session did is in ``response_item`` lines: ``function_call``
(``exec_command`` with ``cmd``, ``shell`` with ``command``, ``update_plan``
with ``plan``, MCP tools, named alone or with a ``namespace``),
``custom_tool_call`` (``apply_patch`` with the patch as ``input``), their
``…_output`` lines, and the assistant's ``message``\\ s. The person's requests
are ``event_msg`` lines: ``item_completed`` with a ``UserMessage`` item, or
``user_message`` in other versions (the ``user`` messages among the response
items also carry the instructions and environment Codex injects). Exit codes
come from ``item_completed`` ``CommandExecution`` items and ``exec_command_end``
events. Anything else is skipped.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from .jsonl import read_jsonl
from .model import AssistantMessage, Entry, TodoList, ToolCall, ToolKind, Transcript, UserMessage
from .tools import ToolNames, todo_list

__all__ = ["find", "locate", "patch_paths", "read", "search_root"]

CLIENT = "codex"
TOOLS = ToolNames(
    edit=frozenset({"apply_patch"}),
    command=frozenset({"exec_command", "shell", "local_shell", "container.exec"}),
    todo=frozenset({"update_plan"}),
)
_PATCH_FILE = re.compile(
    r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$"
)
_EXIT = re.compile(r"(?:exit(?:ed with)? code|exit_code\"?)[: ]+(-?\d+)", re.IGNORECASE)


def locate(cwd: str, session_id: str, home: Path) -> str | None:
    """The newest rollout file named with ``session_id`` under ``$CODEX_HOME/sessions``."""
    return find(search_root(cwd, home), session_id)


def search_root(cwd: str, home: Path) -> str:
    """``$CODEX_HOME/sessions`` (``~/.codex/sessions``), as the hook's environment says.

    No file is looked at: the rollout is searched for (:func:`find`) only once
    the session is dead and its transcript is read, not at every session start.
    """
    return str(Path(os.environ.get("CODEX_HOME") or home / ".codex") / "sessions")


def find(root: str, session_id: str) -> str | None:
    """The newest rollout file named with ``session_id`` in the day folders under ``root``."""
    found = sorted(Path(root).glob(f"*/*/*/rollout-*-{session_id}.jsonl"))
    return str(found[-1]) if found else None


def patch_paths(patch: str) -> tuple[str, ...]:
    """The files an ``apply_patch`` patch adds, changes, deletes or moves to."""
    out: list[str] = []
    for line in patch.splitlines():
        match = _PATCH_FILE.match(line)
        if match:
            path = match.group(1) or match.group(2)
            if path not in out:
                out.append(path)
    return tuple(out)


def read(locator: str, session_id: str | None) -> Transcript:
    problems: list[str] = []
    entries: list[Entry] = []
    calls: dict[str, int] = {}  # call_id -> index in entries
    # The person's requests, each from the one kind of event this version writes.
    items: list[int] = []
    legacy: list[int] = []
    for line in read_jsonl(locator, problems, keep=_may_matter):
        payload = line.get("payload")
        if not isinstance(payload, dict):
            continue
        kind, what = line.get("type"), payload.get("type")
        if kind == "session_meta" and session_id is None and isinstance(payload.get("id"), str):
            session_id = payload["id"]
        elif kind == "event_msg" and what == "user_message":
            text = str(payload.get("message") or "").strip()
            if text:
                legacy.append(len(entries))
                entries.append(UserMessage(text))
        elif kind == "event_msg" and what == "item_completed":
            _completed(payload.get("item"), entries, calls, items)
        elif kind == "event_msg" and what == "exec_command_end":
            _finish(entries, calls, payload.get("call_id"), payload.get("exit_code"))
        elif kind == "response_item":
            _item(payload, entries, calls)
    if items and legacy:
        drop = set(legacy)
        entries = [e for i, e in enumerate(entries) if i not in drop]
    return Transcript(CLIENT, locator, session_id, tuple(entries), tuple(problems))


def _may_matter(raw: bytes) -> bool:
    """False for the token accounting lines, the most frequent lines read here for nothing."""
    head = raw[:160]
    return b'"token_count"' not in head and b'"token_usage_record"' not in head


def _completed(item: Any, entries: list[Entry], calls: dict[str, int], users: list[int]) -> None:
    if not isinstance(item, dict):
        return
    if item.get("type") == "UserMessage":
        text = "\n".join(
            str(c.get("text", ""))
            for c in item.get("content") or []
            if isinstance(c, dict) and c.get("type") == "text"
        ).strip()
        if text:
            users.append(len(entries))
            entries.append(UserMessage(text))
    elif item.get("type") == "CommandExecution":
        _finish(entries, calls, item.get("id"), item.get("exit_code"))


def _item(item: dict[str, Any], entries: list[Entry], calls: dict[str, int]) -> None:
    what = item.get("type")
    if what == "message" and item.get("role") == "assistant":
        text = "\n".join(
            str(c.get("text", ""))
            for c in item.get("content") or []
            if isinstance(c, dict) and c.get("type") in ("output_text", "text")
        ).strip()
        if text:
            entries.append(AssistantMessage(text))
    elif what in ("function_call", "custom_tool_call", "local_shell_call"):
        name = str(item.get("name") or what)
        args = _args(item)
        if TOOLS.is_todo(name):
            entries.append(_plan(args))
            return
        call_id = item.get("call_id")
        if isinstance(call_id, str) and call_id:
            calls[call_id] = len(entries)
        entries.append(_call(name, item.get("namespace"), args, item))
    elif what in ("function_call_output", "custom_tool_call_output"):
        index = calls.get(str(item.get("call_id")))
        if index is not None:
            call = entries[index]
            assert isinstance(call, ToolCall)
            if call.exit_status is None and call.kind == "command":
                match = _EXIT.search(_output_text(item.get("output")))
                status = int(match.group(1)) if match else None
                entries[index] = ToolCall(call.tool, call.kind, call.paths, call.command, status)
            elif not call.finished:
                entries[index] = ToolCall(call.tool, call.kind, call.paths, call.command)


def _args(item: dict[str, Any]) -> dict[str, Any]:
    raw = item.get("arguments", item.get("input", item.get("action")))
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {"input": raw}  # apply_patch's input is the patch itself
        return parsed if isinstance(parsed, dict) else {"input": raw}
    return raw if isinstance(raw, dict) else {}


def _call(name: str, namespace: Any, args: dict[str, Any], item: dict[str, Any]) -> ToolCall:
    kind: ToolKind = TOOLS.kind(name, namespace if isinstance(namespace, str) else None)
    if kind != "edit" and item.get("type") == "local_shell_call":
        kind = "command"  # whatever it is named
    paths: tuple[str, ...] = ()
    command = None
    if kind == "edit":
        paths = patch_paths(str(args.get("input") or args.get("patch") or ""))
    elif kind == "command":
        command = _command(args)
        if "apply_patch" in command:  # a patch sent through the shell is an edit too
            found = patch_paths(command)
            if found:
                kind, paths = "edit", found
    return ToolCall(name, kind, paths, command, finished=False)


def _command(args: dict[str, Any]) -> str:
    cmd = args.get("cmd", args.get("command"))
    if isinstance(cmd, list):
        words = [str(w) for w in cmd]
        # ["bash", "-lc", "<script>"]: the script is the command the model wrote.
        if len(words) == 3 and words[1] in ("-c", "-lc"):
            return words[2]
        return " ".join(words)
    return str(cmd or "")


def _plan(args: dict[str, Any]) -> TodoList:
    found = todo_list(args.get("plan"), ("step",), default_status="pending", need_text=True)
    return found or TodoList(())


def _finish(entries: list[Entry], calls: dict[str, int], call_id: Any, code: Any) -> None:
    index = calls.get(str(call_id))
    if index is None:
        return
    call = entries[index]
    assert isinstance(call, ToolCall)
    status = code if isinstance(code, int) else None
    entries[index] = ToolCall(call.tool, call.kind, call.paths, call.command, status)


def _output_text(output: Any) -> str:
    if isinstance(output, list):
        return "".join(str(i.get("text", "")) for i in output if isinstance(i, dict))
    if isinstance(output, dict):
        return json.dumps(output)
    return str(output or "")
