"""The warm process behind ``warm.py``: imported once, forked once per command.

    python -m agent_mem_vault.cli.warm_server SOCKET_PATH

It imports what ``serve`` and the session hook need (the CLI, the vault, the
MCP SDK) and nothing else, then listens on ``SOCKET_PATH``. For each command
it forks a child that takes the caller's stdin, stdout and stderr, working
directory, environment and umask, and runs the CLI's own ``main`` with the
caller's arguments: the same code as a fresh process, minus the imports.

Rules that keep the fork safe: the parent never starts a thread, an event
loop, or opens a vault or a database (a child would inherit them half-used);
it only imports. One warm process per socket path, held by a lock on
``SOCKET_PATH.lock``; it leaves after ``AGENT_MEM_VAULT_WARM_IDLE`` seconds
without a command, or as soon as its socket file is removed or replaced.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import importlib.util
import io
import json
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from .warm import IDLE_ENV, SWITCH_ENV

__all__ = ["main"]

DEFAULT_IDLE = 1800.0
_LENGTH = struct.calcsize("!Q")


# What ``serve`` and the session hook import. A missing one is a broken install:
# the warm process fails, says so in its failure file, and commands run on their own.
PRELOAD = (
    "agent_mem_vault.cli.main",
    "agent_mem_vault.cli.agents",
    "agent_mem_vault.cli.install",
    "agent_mem_vault.cli.serve",
    "agent_mem_vault.cli.vault",
    "agent_mem_vault.integrations.namespace",
    "agent_mem_vault.integrations.session_hook",
    # The session hook registers the session as a run and may hand off a dead one.
    "agent_mem_vault.integrations.sessions",
    "agent_mem_vault.integrations.session_process",
    "agent_mem_vault.integrations.transcripts.claude_code",
    "agent_mem_vault.integrations.transcripts.codex",
    "agent_mem_vault.runs",
    "agent_mem_vault.runs.notes",
    "agent_mem_vault.store.sqlite",
    "agent_mem_vault.vault.service.vault",
    "agent_mem_vault.mcp.server",
    "agent_mem_vault.mcp.transport",
    "agent_mem_vault.mcp.stdio_loop",
    "mcp.server.stdio",
    "anyio._backends._asyncio",
)
# What the SDK imports only when a server runs, and only if it is installed (its
# log handler uses rich where present): preloaded when there, skipped when not.
PRELOAD_IF_INSTALLED = (
    "rich.console",
    "rich.logging",
)


def preload() -> None:
    """Import everything the eligible commands import, without running any of it."""
    for name in PRELOAD:
        importlib.import_module(name)
    for name in PRELOAD_IF_INSTALLED:
        if importlib.util.find_spec(name.partition(".")[0]) is not None:
            importlib.import_module(name)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.exit("usage: python -m agent_mem_vault.cli.warm_server SOCKET_PATH")
    path = Path(args[0])
    lock = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit(0)  # another warm process has this key
    with contextlib.suppress(OSError):  # stderr is the log: drop the previous process's
        os.ftruncate(2, 0)
    try:
        preload()
        idle = idle_seconds()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        os.chmod(path, 0o600)
        listener.listen(64)
        bound = os.stat(path).st_ino
    except Exception as exc:
        # Commands run on their own meanwhile; the failure file keeps them from
        # starting a warm process that fails the same way, and tells doctor why.
        traceback.print_exc()
        record_failure(path, exc)
        sys.exit(1)
    clear_failure(path)
    # Children are never waited for: the caller gets their status from them directly.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        _accept_loop(listener, path, bound, idle)
    finally:
        listener.close()
        if _still_bound(path, bound):
            path.unlink()


def idle_seconds() -> float:
    """``AGENT_MEM_VAULT_WARM_IDLE``, checked: a bad value is a failure with its own fix."""
    raw = os.environ.get(IDLE_ENV) or ""
    if not raw.strip():
        return DEFAULT_IDLE
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise ValueError(f"{IDLE_ENV} must be a number of seconds above 0, not {raw[:40]!r}")
    return value


def record_failure(path: Path, exc: BaseException) -> None:
    """Write why this warm process failed to ``<key>.failed`` (read by warm.py and doctor)."""
    reason = f"{type(exc).__name__}: {exc}"
    record = {"reason": reason[:500], "fix": _fix_for(exc), "at": time.time(), "pid": os.getpid()}
    failed = path.with_suffix(".failed")
    temporary = failed.with_suffix(f".failed.{os.getpid()}")
    with contextlib.suppress(OSError):
        temporary.write_text(json.dumps(record))
        os.replace(temporary, failed)


def clear_failure(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.with_suffix(".failed").unlink()


def _fix_for(exc: BaseException) -> str:
    if isinstance(exc, ImportError):
        missing = getattr(exc, "name", None) or "a module"
        return (
            f"the installed package cannot import {missing}: reinstall it in this "
            f"environment ({sys.executable} -m pip install --force-reinstall agent-mem-vault)"
        )
    if IDLE_ENV in str(exc):
        return f"set {IDLE_ENV} to a number of seconds, or unset it"
    return f"see the warm process's log; {SWITCH_ENV}=0 turns the fast start off"


def _accept_loop(listener: socket.socket, path: Path, bound: int, idle: float) -> None:
    last = time.monotonic()
    while True:
        ready, _, _ = select.select([listener], [], [], 1.0)
        if not ready:
            if time.monotonic() - last > idle or not _still_bound(path, bound):
                return
            continue
        conn, _ = listener.accept()
        last = time.monotonic()
        if not _same_user(conn):
            conn.close()
            continue
        try:
            pid = os.fork()
        except OSError:
            pid = -1  # the caller sees its connection close and runs the command itself
        if pid == 0:
            listener.close()
            _run_child(conn)  # never returns
        conn.close()


def _still_bound(path: Path, inode: int) -> bool:
    try:
        return os.stat(path).st_ino == inode
    except FileNotFoundError:
        return False


def _same_user(conn: socket.socket) -> bool:
    if not hasattr(socket, "SO_PEERCRED"):
        return True  # the folder is private to this user already
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    uid: int = struct.unpack("3i", creds)[1]
    return uid == os.getuid()


def _run_child(conn: socket.socket) -> None:
    """Become the caller's command; report its exit status; never return."""
    code = 1
    try:
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        request = _receive(conn)
        if request is None:
            code = 0  # a look whether the warm process listens (doctor): nothing to run
            return
        conn.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
        threading.Thread(target=_exit_with_caller, args=(conn,), daemon=True).start()
        code = _run(request)
        conn.sendall(json.dumps({"exit": code}).encode() + b"\n")
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
            sys.stderr.flush()
    finally:
        os._exit(code)


def _receive(conn: socket.socket) -> dict[str, Any] | None:
    """The caller's stdio (made fds 0, 1, 2), then its arguments and surroundings.

    None when the caller closed without sending anything (it only looked).
    """
    data, fds, _flags, _addr = socket.recv_fds(conn, _LENGTH, 3)
    if not data and not fds:
        return None
    if len(data) != _LENGTH or len(fds) != 3:
        raise RuntimeError("the caller sent no stdio")
    (size,) = struct.unpack("!Q", data)
    chunks = []
    while size > 0:
        chunk = conn.recv(min(size, 1 << 16))
        if not chunk:
            raise RuntimeError("the caller left before sending its request")
        chunks.append(chunk)
        size -= len(chunk)
    request: dict[str, Any] = json.loads(b"".join(chunks))
    # One line per command in the warm process's log, before stderr becomes the caller's.
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    print(f"{stamp} pid {os.getpid()}: {' '.join(request['argv'][:2])}", file=sys.stderr)
    sys.stderr.flush()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    return request


def _run(request: dict[str, Any]) -> int:
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.umask(int(request["umask"]))
    encodings = request["encodings"]
    sys.stdin = _text(0, "r", encodings["stdin"])
    sys.stdout = _text(1, "w", encodings["stdout"])
    sys.stderr = _text(2, "w", encodings["stderr"], errors="backslashreplace")
    sys.argv = ["agent-mem-vault", *request["argv"]]
    from .main import main as cli_main

    code: int = 0
    try:
        cli_main(list(request["argv"]))
    except SystemExit as exc:
        code = _status(exc.code)
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
    return code


def _status(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    print(value, file=sys.stderr)
    return 1


def _text(fd: int, mode: str, encoding: str, errors: str = "strict") -> io.TextIOWrapper:
    """A fresh text stream on ``fd`` in the caller's encoding (the parent's may differ)."""
    raw = io.FileIO(fd, mode, closefd=False)
    line_buffering = raw.isatty()
    if mode == "r":
        reader = io.BufferedReader(raw)
        return io.TextIOWrapper(reader, encoding=encoding, errors=errors)
    writer = io.BufferedWriter(raw)
    return io.TextIOWrapper(writer, encoding=encoding, errors=errors, line_buffering=line_buffering)


def _exit_with_caller(conn: socket.socket) -> None:
    """The caller was killed (no signal could be forwarded): end the command with it."""
    with contextlib.suppress(OSError):
        while conn.recv(1024):
            pass
    os._exit(1)


if __name__ == "__main__":
    main()
