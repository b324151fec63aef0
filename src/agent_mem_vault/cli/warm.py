"""A fast start for ``serve`` (stdio) and ``hook session-start``: hand the process to a warm one.

Claude Code, Codex and the other clients start ``agent-mem-vault serve`` afresh
for every session and give up on a server that is slow to answer
``initialize`` (Claude Code after about 5 s; Codex sends its first request
about 1.2 s after the spawn). Importing the MCP SDK alone costs about 1.2 s of
CPU (pydantic building the SDK's models), the same in every fresh process, and
nothing in this package can make it cheaper.

So the work is done once per user and kept: the first command starts a warm
process (``warm_server.py``) that has imported the CLI, the vault and the SDK,
and waits on a Unix socket in a folder only this user can open. Every later
command (this module, stdlib only, plus click) connects, passes its own stdin,
stdout and stderr over the socket (``SCM_RIGHTS``) with its arguments,
environment, working directory and umask, and the warm process forks a child
that becomes the command: the official SDK server then reads and writes the
client's own pipes, so nothing is proxied and nothing sent before the handover
is lost (it waits in the pipe). This process stays as the client's handle:
it forwards SIGTERM/SIGINT/SIGHUP to the child and exits with its status.

The warm process is keyed by the interpreter, the search path and the
package's files (version and modification times): an upgrade or an edit
starts a new one, and the old one leaves after its idle time. Whenever the
warm path cannot be used (no ``fork`` or Unix sockets, a folder that is not
private, a warm process that fails to start), the command runs in this process
exactly as without it, and reports its own errors. ``AGENT_MEM_VAULT_WARM=0``
turns the warm path off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import struct
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ..core.runtime import runtime_dir

if TYPE_CHECKING:
    import subprocess
    from types import FrameType

__all__ = ["handed_over", "runtime_dir", "socket_path"]

SWITCH_ENV = "AGENT_MEM_VAULT_WARM"
"""``0``, ``off``, ``no`` or ``false``: always run in this process."""
IDLE_ENV = "AGENT_MEM_VAULT_WARM_IDLE"
"""Seconds the warm process waits for a next command before it leaves (default 1800)."""
START_TIMEOUT = 60.0
"""How long a command waits for a warm process it started (a busy machine can take 10 s)."""

_OFF = {"0", "off", "no", "false"}
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_PACKAGE = Path(__file__).resolve().parents[1]


def _eligible(argv: list[str]) -> str | None:
    """``serve`` over stdio and the session hook: the commands a client spawns per session."""
    if argv[:1] == ["serve"] and "--http" not in argv:
        return "serve"
    if argv[:2] == ["hook", "session-start"]:
        return "hook"
    return None


def handed_over(argv: list[str]) -> int | None:
    """Run ``argv`` in the warm process; its exit status, or None to run it here.

    >>> handed_over(["serve", "--agent", "codex"])  # doctest: +SKIP
    0
    """
    kind = _eligible(argv)
    if kind is None or os.environ.get(SWITCH_ENV, "").strip().lower() in _OFF:
        return None
    if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
        return None
    try:
        path = socket_path()
        conn = _connect(path)
        if conn is None:
            starter = _start(path)
            if kind == "hook":
                # A hook is cheap enough to run here; the warm process it started
                # serves the MCP server the client launches next.
                return None
            conn = _wait_ready(path, starter)
            if conn is None:
                return None
        replies = _hand_over(conn, argv)
        child = _child_pid(replies)
    except (OSError, ValueError):
        # No child took the command, so nothing has read its stdin or written its
        # stdout yet: run here, as without a warm process.
        return None
    if child is None:
        return None
    return _wait_child(replies, child)


def socket_path() -> Path:
    """The socket of the warm process that matches this interpreter and these files."""
    return runtime_dir() / f"{_key()}.sock"


def _key() -> str:
    """Changes whenever a warm process could run other code than this process would."""
    digest = hashlib.sha256()
    # sys.path[0] is the working directory under ``python -m``: not part of the key.
    for part in (sys.executable, sys.version, *sys.path[1:]):
        digest.update(part.encode() + b"\0")
    for root, dirs, files in os.walk(_PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                info = os.stat(os.path.join(root, name))
                digest.update(f"{root}/{name}:{info.st_mtime_ns}:{info.st_size}\0".encode())
    return digest.hexdigest()[:20]


def _connect(path: Path) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
    except OSError:
        conn.close()
        return None
    return conn


def _start(path: Path) -> subprocess.Popen[bytes]:
    """Start a warm process for ``path`` in its own session, detached from this one."""
    import subprocess

    log = open(path.with_suffix(".log"), "ab")  # noqa: SIM115 - the child keeps it
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "agent_mem_vault.cli.warm_server", str(path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            cwd="/",
            start_new_session=True,
            close_fds=True,
        )
    finally:
        log.close()


def _wait_ready(path: Path, starter: subprocess.Popen[bytes]) -> socket.socket | None:
    """Connect once the warm process listens; None if it failed (then run here)."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        conn = _connect(path)
        if conn is not None:
            return conn
        status = starter.poll()
        # Status 0: another warm process holds this key and is loading; keep waiting.
        if status not in (None, 0):
            return None
        time.sleep(0.01)
    return None


def _hand_over(conn: socket.socket, argv: list[str]) -> BinaryIO:
    """Pass this process's stdio and request to the warm process; the stream of its replies."""
    streams = {
        name: getattr(getattr(sys, name), "encoding", None) or "utf-8"
        for name in ("stdin", "stdout", "stderr")
    }
    header = json.dumps(
        {
            "argv": argv,
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "umask": _umask(),
            "encodings": streams,
        }
    ).encode()
    socket.send_fds(conn, [struct.pack("!Q", len(header))], [0, 1, 2])
    conn.sendall(header)
    return conn.makefile("rb")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _child_pid(replies: BinaryIO) -> int | None:
    """The pid of the child that took the command, or None if none did."""
    line = replies.readline()
    if not line:
        return None
    return int(json.loads(line)["pid"])


def _wait_child(replies: BinaryIO, child: int) -> int:
    """Forward signals to the child and exit with its status."""
    # Only the child reads and writes the client's pipes from now on: when it ends,
    # the client sees end of file at once, whatever this process still does.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    forwarded: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        forwarded.append(signum)
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signum)

    for signum in _FORWARDED:
        signal.signal(signum, forward)
    for line in replies:
        message = json.loads(line)
        if "exit" in message:
            return int(message["exit"])
    if forwarded:
        return 128 + forwarded[-1]
    print("agent-mem-vault: the warm server process ended without an exit status", file=sys.stderr)
    return 1
