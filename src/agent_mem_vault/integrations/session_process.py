"""Which process is the coding agent's session, seen from its session-start hook.

A hook is a child of the client, often through a shell (``sh -c``) or a
launcher (``uvx``); and some clients are themselves started through a
launcher that stays around: Codex's ``codex`` command is a Node wrapper around
the native binary that runs the session, Gemini CLI relaunches itself in a
second Node process. Killing only a launcher leaves the session running, and
a launcher can outlive the session, so the session is the nearest ancestor
that looks like the client (see ``_LOOKS_LIKE``), else the nearest ancestor
that is not a shell or launcher. Linux ``/proc`` only; elsewhere None, and
the run's lease decides liveness.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..runs.process import read_stat

__all__ = ["session_pid"]

_PROC = Path("/proc")
MAX_DEPTH = 12
_PASS_THROUGH = frozenset(
    {
        "sh",
        "bash",
        "dash",
        "zsh",
        "fish",
        "ksh",
        "busybox",
        "env",
        "timeout",
        "nice",
        "nohup",
        "setsid",
        "stdbuf",
        "uv",
        "uvx",
        "pipx",
        "npx",
        "direnv",
    }
)
_LOOKS_LIKE: dict[str, tuple[str, ...]] = {
    # (words any of which in the process's name or first arguments marks the client)
    "claude-code": ("claude",),
    "codex": ("codex",),
    "gemini-cli": ("gemini",),
    "opencode": ("opencode",),
}
_NODE_LAUNCHERS: dict[str, str] = {
    # The Node wrapper around Codex's native binary is a launcher, not the session.
    "codex": "node",
}


def session_pid(client: str | None, start: int | None = None) -> int | None:
    """The pid of the session process above ``start`` (default: this process's parent)."""
    pid = os.getppid() if start is None else start
    fallback = None
    for _ in range(MAX_DEPTH):
        if pid <= 1:
            break
        found = read_stat(pid)
        if found is None:
            break
        comm, ppid = found.comm, found.ppid
        # A shell's command line holds the hook's own words (``--client claude-code``):
        # shells and launchers are passed through before any name is looked at.
        if comm not in _PASS_THROUGH:
            if client in _LOOKS_LIKE and _matches(client, comm, _words(pid, comm)):
                return pid
            if fallback is None:
                fallback = pid
                if client not in _LOOKS_LIKE:
                    return pid
        pid = ppid
    return fallback


def _matches(client: str, comm: str, words: list[str]) -> bool:
    if comm == _NODE_LAUNCHERS.get(client):
        return False
    # The program, and the script a Node or Python program runs (``node …/gemini.js``),
    # past the interpreter's own options (Gemini CLI relaunches itself as
    # ``node --max-old-space-size=… …/index.js``).
    script = next((w for w in words[1:] if not w.startswith("-")), "")
    names = [comm, *(os.path.basename(w) for w in [*words[:1], script] if " " not in w)]
    return any(hint in name for name in names for hint in _LOOKS_LIKE[client])


def _words(pid: int, comm: str) -> list[str]:
    try:
        raw = (_PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return [comm]
    return [w.decode("utf-8", "replace") for w in raw.split(b"\0") if w]
