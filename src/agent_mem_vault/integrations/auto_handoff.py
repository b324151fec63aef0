"""The text of an automatic handoff, built from a dead session's transcript.

No model is called: the same transcript always gives the same text. What a
person picking up the work needs, newest first in importance: what the
session was doing when it stopped, the request it was working on, its todo
list, the files it changed, its last commands and their exit status, its last
message. Everything passes through :func:`~agent_mem_vault.core.secrets.redact`, and the
context is kept under a byte budget (``AGENT_MEM_VAULT_AUTO_HANDOFF_BYTES``, 6 KB by
default) by dropping the oldest items first, with a line saying what went.

Only what the session did after its last explicit ``create_handoff`` counts:
the work before it was handed off already.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ..core.secrets import redact
from .transcripts.model import (
    AssistantMessage,
    Entry,
    TodoList,
    ToolCall,
    Transcript,
    UserMessage,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "AutoHandoff",
    "Stopped",
    "build_auto_handoff",
    "max_bytes_from_env",
    "work_after_last_handoff",
]

DEFAULT_MAX_BYTES = 6 * 1024
MAX_BYTES_ENV = "AGENT_MEM_VAULT_AUTO_HANDOFF_BYTES"
MIN_BYTES = 1024
KEEP_EARLIER = 20
KEEP_COMMANDS = 8
KEEP_FILES = 40


@dataclass(frozen=True)
class Stopped:
    """How the session ended, as its run says."""

    client: str
    session_id: str
    agent: str
    how: str
    """``ended`` (a clean end the client reported) or ``died`` (its process is gone)."""
    started_at: str
    cwd: str


@dataclass(frozen=True)
class AutoHandoff:
    summary: str
    context: str


def max_bytes_from_env() -> int:
    """The context budget: ``AGENT_MEM_VAULT_AUTO_HANDOFF_BYTES`` if it is a number ≥ 1024."""
    raw = os.environ.get(MAX_BYTES_ENV, "").strip()
    try:
        value = int(raw)
    except ValueError:
        return DEFAULT_MAX_BYTES
    return max(MIN_BYTES, value)


def work_after_last_handoff(transcript: Transcript) -> tuple[Entry, ...]:
    """The entries after the last explicit handoff, if they hold work; else ``()``.

    Work is a file edit, a shell command, a tool call cut short, or a request
    the session never answered. Reading, searching and talking are not: a
    session that only looked around leaves nothing to hand off.
    """
    _, after = _split(transcript.entries)
    if any(isinstance(e, ToolCall) and (e.kind != "other" or not e.finished) for e in after):
        return after
    # A request is unanswered when no reply or tool call follows it: one pass
    # finds the last reply, then any request after it.
    last_reply = -1
    for i, entry in enumerate(after):
        if isinstance(entry, AssistantMessage | ToolCall):
            last_reply = i
    if any(isinstance(e, UserMessage) for e in after[last_reply + 1 :]):
        return after
    return ()


@dataclass
class _Parts:
    """The pieces of the context; lists run oldest first, and lose their oldest first."""

    stopped: str
    last_request: str
    earlier: list[str] = field(default_factory=list)
    todos: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    git_status: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    last_message: str = ""
    problems: list[str] = field(default_factory=list)
    cut: dict[str, int] = field(default_factory=dict)


def build_auto_handoff(
    transcript: Transcript,
    stopped: Stopped,
    *,
    git_status: Sequence[str] = (),
    max_bytes: int = DEFAULT_MAX_BYTES,
    root: str | None = None,
) -> AutoHandoff:
    """The summary and context of the automatic handoff for ``stopped``'s session.

    Changed files are named from ``root`` (the repository's folder; the
    session's working directory when None), as ``git status`` names them.
    """
    before, after = _split(transcript.entries)
    parts = _parts(before, after, transcript, git_status, root or stopped.cwd)
    head = _head(stopped, transcript)
    context = _fit(head, parts, max(MIN_BYTES, max_bytes))
    what = "ended" if stopped.how == "ended" else "stopped (its process is gone)"
    request = _one_line(parts.last_request, 160) if parts.last_request else "none recorded"
    summary = redact(
        f"Automatic handoff: {_session(stopped)} {what} without writing one. "
        f"Last request: {request}"
    )
    return AutoHandoff(summary=summary, context=context)


def _split(entries: Sequence[Entry]) -> tuple[tuple[Entry, ...], tuple[Entry, ...]]:
    last = max(
        (i for i, e in enumerate(entries) if isinstance(e, ToolCall) and e.kind == "handoff"),
        default=-1,
    )
    return tuple(entries[: last + 1]), tuple(entries[last + 1 :])


def _parts(
    before: Sequence[Entry],
    after: Sequence[Entry],
    transcript: Transcript,
    git_status: Sequence[str],
    root: str,
) -> _Parts:
    requests = [e.text for e in after if isinstance(e, UserMessage)]
    if not requests:
        # Working on a request made before the handoff: it is still what it was doing.
        requests = [e.text for e in before if isinstance(e, UserMessage)][-1:]
    calls = [e for e in after if isinstance(e, ToolCall)]
    todo = next((e for e in reversed(after) if isinstance(e, TodoList)), None)
    message = next((e.text for e in reversed(after) if isinstance(e, AssistantMessage)), "")
    files: list[str] = []
    for call in calls:
        for changed in call.paths if call.kind == "edit" else ():
            path = _from_root(changed, root)
            if path in files:
                files.remove(path)
            files.append(path)
    commands = [_command_line(c) for c in calls if c.kind == "command" and c.command]
    parts = _Parts(
        stopped=_stopped_line(after),
        last_request=requests[-1] if requests else "",
        earlier=[_one_line(r, 200) for r in requests[:-1]],
        todos=[_one_line(f"[{_mark(i.status)}] {i.text}", 200) for i in todo.items] if todo else [],
        files=files,
        git_status=list(git_status),
        commands=commands,
        last_message=message,
        problems=list(transcript.problems),
    )
    # Capped before redacting: a long session's thousands of requests cost nothing.
    _pre_cap(parts)
    _redact(parts)
    return parts


def _redact(parts: _Parts) -> None:
    for name in ("stopped", "last_request", "last_message"):
        setattr(parts, name, redact(getattr(parts, name)))
    for name in ("earlier", "todos", "files", "git_status", "commands", "problems"):
        items: list[str] = getattr(parts, name)
        items[:] = [redact(item) for item in items]


def _pre_cap(parts: _Parts) -> None:
    """Keep the lists to a size the fitting loop handles quickly; count what went."""
    for name, keep in (("earlier", KEEP_EARLIER), ("commands", KEEP_COMMANDS)):
        items: list[str] = getattr(parts, name)
        if len(items) > keep:
            parts.cut[name] = len(items) - keep
            del items[: len(items) - keep]
    for name in ("files", "git_status"):
        items = getattr(parts, name)
        if len(items) > KEEP_FILES:
            parts.cut[name] = len(items) - KEEP_FILES
            del items[: len(items) - KEEP_FILES]


def _stopped_line(after: Sequence[Entry]) -> str:
    running = [e for e in after if isinstance(e, ToolCall) and not e.finished]
    if running:
        call = running[-1]
        what = call.command or ", ".join(call.paths) or ""
        detail = f" `{_one_line(what, 300)}`" if what else ""
        return f"Interrupted while running {call.tool}{detail}: it never returned."
    last = after[-1] if after else None
    if isinstance(last, UserMessage):
        return "Interrupted before answering the last request."
    if isinstance(last, ToolCall):
        return f"Stopped after {last.tool} returned, before the model's next step."
    return "Stopped between steps (its last tool calls had all returned)."


def _command_line(call: ToolCall) -> str:
    status = (
        "did not finish"
        if not call.finished
        else "exit status unknown"
        if call.exit_status is None
        else f"exit {call.exit_status}"
    )
    return f"`{_one_line(call.command or '', 300)}` → {status}"


def _mark(status: str) -> str:
    return {"completed": "x", "in_progress": "~", "done": "x"}.get(status.lower(), " ")


def _head(stopped: Stopped, transcript: Transcript) -> str:
    how = (
        "ended without writing a handoff"
        if stopped.how == "ended"
        else "stopped without writing a handoff: its process is gone (killed, crashed, "
        "or its terminal was closed)"
    )
    return (
        f"agent-mem-vault wrote this from the transcript of {_session(stopped)} "
        f"(session {stopped.session_id}, started {stopped.started_at}, "
        f"in {stopped.cwd}) that {how}. No model wrote it: it is what the transcript "
        f"records after the session's last explicit handoff, secrets redacted.\n"
        f"Transcript: {transcript.source}"
    )


def _session(stopped: Stopped) -> str:
    """``a codex session``, or ``a codex session of agent reviewer`` when the names differ."""
    if stopped.agent == stopped.client:
        return f"a {stopped.client} session"
    return f"a {stopped.client} session of agent {stopped.agent}"


def _render(head: str, p: _Parts) -> str:
    out = [head, "", "### When it stopped", p.stopped]
    if p.last_request:
        out += ["", "### Last request", p.last_request]
    if p.earlier:
        out += ["", "### Earlier requests", *(f"- {r}" for r in p.earlier)]
    if p.todos:
        out += ["", "### Todo list", *(f"- {t}" for t in p.todos)]
    if p.files or p.git_status:
        out += ["", "### Files changed", *(f"- {f}" for f in p.files)]
        if p.git_status:
            out += ["git status at takeover:", *(f"    {line}" for line in p.git_status)]
    if p.commands:
        out += ["", "### Last commands (oldest first)", *(f"- {c}" for c in p.commands)]
    if p.last_message:
        out += ["", "### Last assistant message", p.last_message]
    if p.problems:
        out += ["", "### Transcript problems", *(f"- {_one_line(x, 200)}" for x in p.problems)]
    if p.cut:
        said = ", ".join(f"{n} {_CUT_WORDS[k]}" for k, n in p.cut.items())
        out += ["", f"[cut to fit: {said}]"]
    return "\n".join(out)


_CUT_WORDS = {
    "earlier": "earlier requests",
    "commands": "older commands",
    "files": "older changed files",
    "git_status": "git status lines",
    "todos": "todo items",
    "problems": "problem lines",
    "last_message": "characters of the last assistant message",
    "last_request": "characters of the last request",
}


def _fit(head: str, p: _Parts, limit: int) -> str:
    """Render, dropping the oldest and least needed items until it fits ``limit`` bytes."""
    while len((text := _render(head, p)).encode("utf-8")) > limit:
        if not _drop_one(p, len(text.encode("utf-8")) - limit):
            return _cut_bytes(text, limit)
    return text


def _drop_one(p: _Parts, over: int) -> bool:
    for name in ("problems", "earlier", "git_status", "todos"):
        items: list[str] = getattr(p, name)
        if items:
            items.pop(0)
            p.cut[name] = p.cut.get(name, 0) + 1
            return True
    if len(p.commands) > 1:
        p.commands.pop(0)
        p.cut["commands"] = p.cut.get("commands", 0) + 1
        return True
    if len(p.files) > 1:
        p.files.pop(0)
        p.cut["files"] = p.cut.get("files", 0) + 1
        return True
    for name, floor in (("last_message", 300), ("last_request", 600)):
        text: str = getattr(p, name)
        if len(text) > floor:
            # Keep the end of the message (its newest part) and the start of the request.
            drop = min(len(text) - floor, max(over, 64))
            kept = "…" + text[drop + 1 :] if name == "last_message" else text[: -drop - 1] + "…"
            setattr(p, name, kept)
            p.cut[name] = p.cut.get(name, 0) + drop
            return True
    return False


def _cut_bytes(text: str, limit: int) -> str:
    marker = "\n[cut to fit]"
    room = limit - len(marker.encode("utf-8"))
    return text.encode("utf-8")[:room].decode("utf-8", "ignore") + marker


def _from_root(path: str, root: str) -> str:
    """``path`` from the repository's folder when it lies in it; else as it was."""
    try:
        return PurePosixPath(path).relative_to(root).as_posix() if root else path
    except ValueError:
        return path


_PLACEHOLDER = re.compile(r"\[redacted[^\]]*\]")


def _one_line(text: str, width: int) -> str:
    """``text`` on one line, at most ``width`` characters: cut at a word, never inside
    a ``[redacted …]`` placeholder (which would then look like text of the secret's)."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    cut = width - 1
    for found in _PLACEHOLDER.finditer(flat):
        if found.start() < cut < found.end():
            cut = found.start()
    space = flat.rfind(" ", 0, cut + 1)
    if space > width // 2:
        cut = space
    return flat[:cut].rstrip(" ,;:") + "…"
