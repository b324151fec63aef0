"""The only code that locks the vault and writes note files.

Two agents may write at once (two processes, or two threads of one server).
Every write runs inside ``VaultLock``: an exclusive ``flock`` on
``.agent-mem-vault/lock`` that waits at most ``timeout`` seconds and then
raises ``UnavailableError`` (``lock_timeout``). ``flock`` is released by the
kernel when a process dies, so a writer killed with SIGKILL never leaves the
vault locked.

Each file is replaced atomically: the new text goes to a temporary file in
the same folder, is fsynced, renamed over the target, and then the folder is
fsynced so that the rename itself is durable. A reader therefore sees the old
note or the new one, never half of one.
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import threading
from pathlib import Path
from types import TracebackType

from ..core.errors import UnavailableError

__all__ = ["PreparedWrite", "VaultLock", "atomic_write", "fsync_dir"]


class VaultLock:
    """Reentrant (within a thread) exclusive lock on a vault, across processes.

    The timeout is real time on purpose: it bounds how long a caller actually
    waits, whatever clock the service was given.
    """

    def __init__(self, path: Path, timeout: float = 5.0) -> None:
        self.path = path
        self.timeout = timeout
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    def acquire(self) -> None:
        if not self._thread_lock.acquire(timeout=self.timeout):
            raise self._timeout_error()
        if self._depth:
            self._depth += 1
            return
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except BaseException:
            self._thread_lock.release()
            raise
        try:
            got = _try_flock(fd) or _flock_within(fd, self.timeout)
        except BaseException:
            os.close(fd)
            self._thread_lock.release()
            raise
        if not got:
            # _flock_within now owns fd: it closes it if the lock ever comes.
            self._thread_lock.release()
            raise self._timeout_error()
        self._fd = fd
        self._depth = 1

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        self._thread_lock.release()

    @property
    def held(self) -> bool:
        """True when this thread of this process holds the lock."""
        return self._depth > 0

    def _timeout_error(self) -> UnavailableError:
        return UnavailableError(
            f"the vault is locked by another writer and the lock did not come within "
            f"{self.timeout:g} s ({self.path}); retry, and if it persists find the process "
            "that holds it (e.g. 'fuser' on that file)",
            code="lock_timeout",
            path=str(self.path),
        )

    def __enter__(self) -> VaultLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _flock_within(fd: int, timeout: float) -> bool:
    """Wait for the lock in the kernel's queue, but give up after ``timeout`` seconds.

    A blocking ``flock`` is woken as soon as the holder lets go, so waiters
    are served far more evenly than by polling (polling writers starved each
    other past the timeout with 8 processes). ``flock`` has no timeout, so a
    helper thread blocks in it; if the caller gives up first, the helper
    releases the lock and closes ``fd`` the moment it gets it.
    """
    state = {"abandoned": False, "got": False}
    error: list[BaseException] = []
    guard = threading.Lock()
    done = threading.Event()

    def wait() -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException as exc:  # reported to the caller below
            error.append(exc)
            done.set()
            return
        with guard:
            if state["abandoned"]:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
            else:
                state["got"] = True
        done.set()

    threading.Thread(target=wait, name="vault-lock-wait", daemon=True).start()
    done.wait(timeout)
    with guard:
        if state["got"]:
            return True
        if error:
            raise error[0]
        state["abandoned"] = True
        return False


def fsync_dir(path: Path) -> None:
    """Make a rename or a new entry in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class PreparedWrite:
    """A note's new text, already in a fsynced temp file beside it; ``commit`` puts it in place.

    The two steps are apart so that a caller can stage several files and
    rename them only when every one was written. (Staging a new note before
    taking the vault lock was tried and dropped: the temp file changes the
    folder's mtime, which sends every other process to rescan that folder.)
    """

    __slots__ = ("durable", "path", "stat", "tmp")

    def __init__(self, path: Path, text: str, *, durable: bool = True) -> None:
        self.path = path
        self.durable = durable
        data = text.encode("utf-8")
        self.tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if durable:
                os.fsync(fd)
            self.stat = os.fstat(fd)
        except BaseException:
            os.close(fd)
            self.tmp.unlink(missing_ok=True)
            raise
        os.close(fd)

    def commit(self) -> os.stat_result:
        """Rename over the target (atomic), then make the rename durable; returns the stat."""
        try:
            os.replace(self.tmp, self.path)
        except BaseException:
            self.discard()
            raise
        if self.durable:
            fsync_dir(self.path.parent)
        return self.stat

    def discard(self) -> None:
        self.tmp.unlink(missing_ok=True)


def atomic_write(path: Path, text: str, *, durable: bool = True) -> os.stat_result:
    """Replace ``path`` with ``text`` atomically; returns the new file's stat.

    With ``durable=False`` the fsyncs are skipped: the write still survives the
    process being killed (the kernel has it), but not a power cut.
    """
    return PreparedWrite(path, text, durable=durable).commit()
