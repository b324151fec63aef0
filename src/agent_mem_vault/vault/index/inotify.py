"""Linux's inotify read directly: a look at the watch that needs no wait.

The kernel queues an inotify event while the system call that made the change
is still running, before it returns to the process that made it. So a
non-blocking read of the inotify descriptor, started after a change was made,
finds that change's event: it is a barrier by itself, with no mark file to
make and no thread to wait for (``watchfiles`` reads the descriptor in a
thread of its own, which a caller can only wait for; see ``watch._drain``).

A thread of ours empties the queue once events come, so a long quiet spell
followed by many changes does not fill the kernel's queue (16,384 events by
default) before the next call reads it; a queue that overflowed anyway is
told (``IN_Q_OVERFLOW``) and the watch is then taken as broken. The thread
lets events gather for ``_SETTLE_S`` before it reads them: a note written by
this process makes five events in a millisecond, and a thread woken for each
would take the interpreter's lock from the writer between its system calls
(the writer's next call reads them in passing anyway).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import select
import struct
import sys
import threading
from collections.abc import Iterable

__all__ = ["Inotify", "LimitReached", "QueueOverflow", "available", "refusal"]

ADDED, MODIFIED, DELETED = 1, 2, 3
"""The kinds ``watchfiles`` reports, so both watches feed the same sorting."""

_MODIFY = 0x2
_ATTRIB = 0x4
_CLOSE_WRITE = 0x8
_MOVED_FROM = 0x40
_MOVED_TO = 0x80
_CREATE = 0x100
_DELETE = 0x200
_DELETE_SELF = 0x400
_MOVE_SELF = 0x800
_Q_OVERFLOW = 0x4000
_ONLYDIR = 0x01000000
_DONT_FOLLOW = 0x02000000
_NONBLOCK = os.O_NONBLOCK
_CLOEXEC = 0o2000000

_MASK = (
    _MODIFY
    | _ATTRIB
    | _CLOSE_WRITE
    | _MOVED_FROM
    | _MOVED_TO
    | _CREATE
    | _DELETE
    | _DELETE_SELF
    | _MOVE_SELF
    | _ONLYDIR
    | _DONT_FOLLOW
)
_HEADER = struct.Struct("iIII")
_POLL_MS = 1000
"""How long the reading thread waits at most before looking whether it was closed."""
_SETTLE_S = 0.05
"""How long the reading thread lets events gather before it reads them: the kernel's
queue takes hundreds of thousands of events a second to fill in that time."""


class QueueOverflow(Exception):
    """The kernel's queue overflowed: events were lost."""


class LimitReached(OSError):
    """inotify refused for one of this user's limits (``errno`` ``ENOSPC``: watches,
    ``EMFILE``: instances or open files); the message names the setting that raises it.

    The limits are per user, shared by every program that watches files (editors,
    language servers, sync tools), so a vault of a few folders can meet them too.
    """

    def __str__(self) -> str:
        return str(self.strerror)


def _setting(name: str) -> str:
    """The value of ``/proc/sys/fs/inotify/<name>``, or ``?`` if it cannot be read."""
    try:
        with open(f"/proc/sys/fs/inotify/{name}", encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return "?"


def _raised(current: str) -> str:
    """A value to suggest for a limit that is ``current`` now: twice as much."""
    return str(int(current) * 2) if current.isdigit() else "<n>"


def _fds_exhausted() -> bool:
    """Whether this process has as many open files as it may (``EMFILE`` then means that,
    not inotify's instance limit)."""
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        return soft != resource.RLIM_INFINITY and len(os.listdir("/proc/self/fd")) >= soft
    except OSError as exc:
        return exc.errno == errno.EMFILE  # not even one more to list them with


def refusal(err: int, folder: str | None = None) -> OSError:
    """The error for inotify's refusal ``err`` (of ``inotify_add_watch`` on ``folder``,
    else of ``inotify_init1``): for its limits a ``LimitReached`` that names the fix."""
    if err == errno.ENOSPC and folder is not None:
        now = _setting("max_user_watches")
        return LimitReached(
            err,
            f"inotify's limit of watched folders for this user is reached "
            f"(fs.inotify.max_user_watches is {now}, shared with every program that "
            f"watches files); raise it with 'sudo sysctl "
            f"fs.inotify.max_user_watches={_raised(now)}' (and the same line in "
            f"/etc/sysctl.d/ to keep it)",
        )
    if err == errno.EMFILE and folder is None:
        if _fds_exhausted():
            return LimitReached(
                err,
                "this process has as many open files as it may; raise its limit "
                "('ulimit -n' in the shell that starts it)",
            )
        now = _setting("max_user_instances")
        return LimitReached(
            err,
            f"inotify's limit of watching programs for this user is reached "
            f"(fs.inotify.max_user_instances is {now}: one for each program that watches "
            f"files); raise it with 'sudo sysctl "
            f"fs.inotify.max_user_instances={_raised(now)}' (and the same line in "
            f"/etc/sysctl.d/ to keep it)",
        )
    if folder is None:
        return OSError(err, os.strerror(err))
    return OSError(err, os.strerror(err), folder)


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()


def available() -> bool:
    """Whether inotify can be used here (Linux, with a C library that has it)."""
    return _LIBC is not None


class Inotify:
    """One inotify instance watching ``folders`` (each on its own, not recursively).

    A folder that is gone or no longer a folder when it is added is skipped (a
    new listing finds what replaced it); any other refusal (no permission) raises
    ``OSError`` (``LimitReached`` for the watch or instance limit, see ``refusal``),
    so a watch never covers only some folders without saying so.
    """

    def __init__(self, folders: Iterable[str]) -> None:
        if _LIBC is None:
            raise OSError(errno.ENOSYS, "inotify is not available here")
        fd = _LIBC.inotify_init1(_NONBLOCK | _CLOEXEC)
        if fd < 0:
            raise refusal(ctypes.get_errno())
        self._fd = fd
        self._paths: dict[int, str] = {}
        self._lock = threading.Lock()
        self._gathered: set[tuple[int, str]] = set()
        self._moving: dict[int, str] = {}
        """The path each rename (by its cookie) moved from, until its other half is read."""
        self._moved_in: dict[str, str] = {}
        self.moved_in: dict[str, str] = {}
        """Of the paths in the last ``changes``: those whose last event was a rename onto
        them, with the path renamed from."""
        self._overflowed = False
        self._closed = False
        self._stop = threading.Event()
        try:
            for folder in folders:
                wd = _LIBC.inotify_add_watch(fd, os.fsencode(folder), _MASK)
                if wd < 0:
                    err = ctypes.get_errno()
                    if err in (errno.ENOENT, errno.ENOTDIR):
                        continue
                    raise refusal(err, folder)
                self._paths[wd] = folder
        except BaseException:
            os.close(fd)
            raise
        self._thread = threading.Thread(target=self._gather, name="vault-inotify", daemon=True)
        self._thread.start()

    def changes(self) -> set[tuple[int, str]]:
        """(kind, path) of every change made before this call and not yet returned.

        Raises ``QueueOverflow`` if the kernel dropped events since the last call.
        """
        with self._lock:
            if self._closed:
                raise OSError(errno.EBADF, "the watch is closed")
            self._read()
            if self._overflowed:
                raise QueueOverflow("the kernel's inotify queue overflowed")
            out, self._gathered = self._gathered, set()
            self.moved_in, self._moved_in = self._moved_in, {}
            return out

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            if not self._closed:
                self._closed = True
                os.close(self._fd)

    def _gather(self) -> None:
        """Read events as they come (see the module's docstring) until closed."""
        poller = select.poll()
        with self._lock:
            if self._closed:
                return
            poller.register(self._fd, select.POLLIN)
        while True:
            try:
                ready = poller.poll(_POLL_MS)
            except OSError:
                ready = []
            if ready and self._stop.wait(_SETTLE_S):
                return
            with self._lock:
                if self._closed:
                    return
                if ready:
                    self._read()

    def _read(self) -> None:
        """Everything queued now, into ``_gathered`` (under the lock)."""
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return
            except InterruptedError:
                continue
            self._parse(data)

    def _parse(self, data: bytes) -> None:
        offset = 0
        while offset + _HEADER.size <= len(data):
            wd, mask, cookie, size = _HEADER.unpack_from(data, offset)
            offset += _HEADER.size
            raw = data[offset : offset + size].rstrip(b"\0")
            offset += size
            if mask & _Q_OVERFLOW:
                self._overflowed = True
                continue
            folder = self._paths.get(wd)
            if folder is None:
                continue  # a folder whose watch went with it (removed or moved away)
            if not raw:
                if mask & (_DELETE_SELF | _MOVE_SELF):
                    # The folder itself went: told as deleted (its parent tells it too,
                    # if watched). A watch that followed it elsewhere is dropped, or
                    # its events would be told under the old path.
                    self._gathered.add((DELETED, folder))
                    del self._paths[wd]
                    if mask & _MOVE_SELF and _LIBC is not None:
                        _LIBC.inotify_rm_watch(self._fd, wd)
                elif mask & (_ATTRIB | _MODIFY):
                    self._gathered.add((MODIFIED, folder))
                continue
            path = os.path.join(folder, os.fsdecode(raw))
            self._moved_in.pop(path, None)
            if mask & _MOVED_FROM:
                if len(self._moving) > 1000:
                    self._moving.clear()  # halves moved out of the watch: never paired
                self._moving[cookie] = path
            elif mask & _MOVED_TO and cookie in self._moving:
                self._moved_in[path] = self._moving.pop(cookie)
            if mask & (_CREATE | _MOVED_TO):
                kind = ADDED
            elif mask & (_DELETE | _MOVED_FROM):
                kind = DELETED
            else:
                kind = MODIFIED
            self._gathered.add((kind, path))
