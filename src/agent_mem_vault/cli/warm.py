"""A fast start for ``serve`` (stdio) and ``hook session-start``: hand the process to a warm one.

Claude Code, Codex and the other clients start ``agent-mem-vault serve`` afresh
for every session and give up on a server that is slow to answer
``initialize`` (Claude Code after about 5 s; Codex sends its first request
about 1.2 s after the spawn). Importing the MCP SDK alone costs about 1.2 s of
CPU (pydantic building the SDK's models), the same in every fresh process, and
nothing in this package can make it cheaper.

So the work is done once per user and kept: a command that finds no warm
process starts one (``warm_server.py``), which imports the CLI, the vault and
the SDK and waits on a Unix socket in a folder only this user can open, and
runs on its own meanwhile: it never waits for a warm process to load, so no
start is slower than it would be without one. Every later command (this
module, stdlib only, plus click) connects, passes its own stdin,
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
exactly as without it, and reports its own errors. A warm process that fails
writes why to ``<key>.failed``; no command starts another for that key until
``RETRY_AFTER`` has passed, and ``doctor`` shows the reason and the fix.
``AGENT_MEM_VAULT_WARM=0`` turns the warm path off.
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
from typing import TYPE_CHECKING, Any, BinaryIO

from ..core.runtime import CALLER_ENV, runtime_dir

if TYPE_CHECKING:
    from types import FrameType

__all__ = ["CALLER_ENV", "handed_over", "runtime_dir", "socket_path", "warm_status"]

SWITCH_ENV = "AGENT_MEM_VAULT_WARM"
"""``0``, ``off``, ``no`` or ``false``: always run in this process."""
IDLE_ENV = "AGENT_MEM_VAULT_WARM_IDLE"
"""Seconds the warm process waits for a next command before it leaves (default 1800)."""
RETRY_AFTER = 600.0
"""Seconds after a warm process failed before a command starts another for the same key."""

_OFF = {"0", "off", "no", "false"}
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_PACKAGE = Path(__file__).resolve().parents[1]


def _eligible(argv: list[str]) -> str | None:
    """``serve`` over stdio and the session hook: the commands a client spawns per session."""
    if argv[:1] == ["serve"] and "--http" not in argv:
        return "serve"
    if argv[:2] in (["hook", "session-start"], ["plugin", "hook"]):
        return "hook"
    return None


def handed_over(argv: list[str]) -> int | None:
    """Run ``argv`` in the warm process; its exit status, or None to run it here.

    >>> handed_over(["serve", "--agent", "codex"])  # doctest: +SKIP
    0
    """
    if _eligible(argv) is None or _switched_off():
        return None
    if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
        return None
    signals = _Signals()  # from here on a signal is kept for the child, not lost
    child: int | None = None
    try:
        path = socket_path()
        conn = _connect(path)
        if conn is None:
            if _failed_recently(path) is None:
                _start(path)
            # Loading takes as long as importing here would: run here, and let the
            # warm process serve the next command.
            return None
        replies = _hand_over(conn, argv)
        child = _child_pid(replies)
    except Exception:
        # No child took the command (the socket failed, or an answer that is not a
        # pid), so nothing has read its stdin or written its stdout yet: run here,
        # as without a warm process.
        return None
    finally:
        if child is None:
            signals.restore()  # this process runs the command after all
    if child is None:
        return None
    return _wait_child(replies, child, signals)


def warm_status() -> dict[str, object]:
    """What ``doctor`` says of the fast start: off, running, failed (why, the fix) or idle."""
    if _switched_off():
        return {"state": "off", "detail": f"{SWITCH_ENV} turns it off"}
    if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
        return {"state": "unavailable", "detail": "this system has no fork or fd passing"}
    try:
        path = socket_path(create=False)
    except PermissionError as exc:
        return {"state": "unavailable", "detail": str(exc)}
    status: dict[str, object] = {"socket": str(path), "log": str(path.with_suffix(".log"))}
    conn = _connect(path)
    if conn is not None:
        conn.close()
        return {"state": "running", **status}
    failure = _failed_recently(path, within=float("inf"))
    if failure is not None:
        retry = float(failure.get("at", 0)) + RETRY_AFTER
        when = (
            f"after {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(retry))}"
            if retry > time.time()
            else "at the next session start"
        )
        return {
            "state": "failed",
            **status,
            "reason": str(failure.get("reason", "")),
            "fix": str(failure.get("fix", "")),
            "retry_at": when,
            "failure_file": str(path.with_suffix(".failed")),
        }
    return {"state": "idle", **status, "detail": "the next session start starts it"}


def _switched_off() -> bool:
    return os.environ.get(SWITCH_ENV, "").strip().lower() in _OFF


def _failed_recently(path: Path, within: float = RETRY_AFTER) -> dict[str, Any] | None:
    """The failure record of the warm process for ``path``, if it failed ``within`` seconds."""
    try:
        record = json.loads(path.with_suffix(".failed").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    at = record.get("at")
    if not isinstance(at, int | float) or time.time() - at > within:
        return None
    return record


def socket_path(create: bool = True) -> Path:
    """The socket of the warm process that matches this interpreter and these files."""
    return runtime_dir(create=create) / f"{_key()}.sock"


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


def _start(path: Path) -> None:
    """Start a warm process for ``path`` in its own session, detached from this one."""
    import subprocess

    log = open(path.with_suffix(".log"), "ab")  # noqa: SIM115 - the child keeps it
    try:
        subprocess.Popen(
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
            # The command's own pid goes along: the session hook finds the client
            # that spawned it by walking up from here, not from the warm process.
            "env": {**os.environ, CALLER_ENV: str(os.getpid())},
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


class _Signals:
    """SIGTERM, SIGINT and SIGHUP caught from before the handover on, for the child.

    A signal that came before the child's pid was known is sent to it as soon as
    it is; once one came, the command's status is that of a command it ended
    (128 + the signal), whatever the child managed to report first. A second
    signal while the child is still unknown means the handover is stuck (a warm
    process that does not answer): this process then ends as the signal says.
    """

    def __init__(self) -> None:
        self.received: list[int] = []
        self.child: int | None = None
        self._restored = False
        self._previous = {signum: signal.signal(signum, self._handle) for signum in _FORWARDED}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signum)
        if self.child is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.child, signum)
        elif len(self.received) > 1:
            self.restore()

    def forward_to(self, child: int) -> None:
        # Blocked meanwhile, so a signal arriving now is sent once: by _handle, after.
        signal.pthread_sigmask(signal.SIG_BLOCK, _FORWARDED)
        try:
            self.child = child
            kept = list(self.received)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _FORWARDED)
        for signum in kept:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signum)

    def restore(self) -> None:
        """Back to how it was, and act on a signal kept meanwhile: this process runs the command."""
        if self._restored:
            return
        self._restored = True
        for forwarded, handler in self._previous.items():
            signal.signal(forwarded, handler)
        for signum in self.received:
            signal.raise_signal(signum)


def _wait_child(replies: BinaryIO, child: int, signals: _Signals) -> int:
    """Forward signals to the child and exit with its status."""
    # Only the child reads and writes the client's pipes from now on: when it ends,
    # the client sees end of file at once, whatever this process still does.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    signals.forward_to(child)
    status: int | None = None
    for line in replies:
        message = json.loads(line)
        if "exit" in message:
            status = int(message["exit"])
            break
    if signals.received:
        return 128 + signals.received[0]
    if status is not None:
        return status
    print("agent-mem-vault: the warm server process ended without an exit status", file=sys.stderr)
    return 1
