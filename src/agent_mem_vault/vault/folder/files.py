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

A writer killed between making its temp file and renaming it leaves the temp
file behind. So the lock keeps a journal: ``atomic_write`` under the lock
first notes its temp file's name in the lock file itself (one ``pwrite``),
and the lock empties it when let go. A holder that finds the journal not empty
is the next to hold the lock after a writer died: it removes the temp files
named there that are still present, and records that it did
(``repairs.py``, for ``doctor``). The next write (or any call that takes the
lock) cleans up; nobody has to run ``reindex``.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import secrets
import threading
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from types import TracebackType

from ...core.clock import SYSTEM_CLOCK, Clock
from ...core.errors import InvalidInputError, UnavailableError
from . import repairs

TEMP_FILE = re.compile(r"\..+\.[0-9a-f]{8}\.tmp")
"""The name of a temp file ``atomic_write`` leaves if it is killed before the rename
(``temp_path``'s names)."""

__all__ = [
    "LOCK_FILE",
    "LOCK_TIMEOUT_ENV",
    "TEMP_FILE",
    "CallCancelled",
    "LockBusy",
    "Staged",
    "VaultLock",
    "atomic_write",
    "file_digest",
    "fsync_dir",
    "held_lock",
    "lock_timeout_setting",
    "publish",
    "stage",
    "temp_path",
    "vault_lock",
]

LOCK_FILE = ".agent-mem-vault/lock"
"""The vault's lock file, relative to the vault folder."""


class LockBusy(Exception):
    """The vault's locks could not be had at once (another thread or process holds
    one, or the lock file refused), and the caller asked not to wait: nothing was
    done, so it may make the call the usual way where waiting is harmless (a
    worker thread rather than an event loop)."""


class CallCancelled(Exception):
    """The caller gave up on a call before it began: it waited for the vault's locks
    and, once it had them, was told it is no longer wanted, so it changed nothing."""


_HOLDING = threading.local()
"""The ``VaultLock`` this thread holds (``held_lock``), whose journal ``atomic_write`` writes."""

CLEANED_WHY = "a temp file left by a write whose process was killed"


class VaultLock:
    """Reentrant (within a thread) exclusive lock on a vault, across processes.

    The timeout is real time on purpose: it bounds how long a caller actually
    waits, whatever clock the service was given. ``clock`` dates what the lock
    records when it cleans up after a killed writer (see the module doc).
    """

    def __init__(self, path: Path, timeout: float = 5.0, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.path = path
        self.timeout = timeout
        self.clock = clock
        self.root = path.parent.parent
        """The vault folder (the lock file is ``<vault>/.agent-mem-vault/lock``)."""
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None
        self._journal_end = 0
        self._outer: VaultLock | None = None
        self.cleaned: list[str] = []
        """Temp files of killed writers this lock removed, relative to the vault."""

    def acquire(self, timeout: float | None = None) -> None:
        """Take the lock, waiting at most ``timeout`` seconds (default: ``self.timeout``)."""
        wait = self.timeout if timeout is None else max(0.0, timeout)
        if not self._thread_lock.acquire(timeout=wait):
            raise self.timeout_error()
        if not self._take_file(lambda fd: _flock_or_give_up(fd, wait)):
            raise self.timeout_error()

    def try_acquire(self) -> bool:
        """Take the lock only if it is free right now: False at once, holding
        nothing, when another thread or process has it."""
        if not self._thread_lock.acquire(blocking=False):
            return False
        return self._take_file(_try_flock_or_close)

    def _take_file(self, flock: Callable[[int], bool]) -> bool:
        """With the thread lock held: the file lock too (``flock`` closes the file
        when it gives up), or False with the thread lock let go again."""
        if self._depth:
            self._depth += 1
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            got = flock(fd)
        except BaseException:
            self._thread_lock.release()
            raise
        if not got:
            self._thread_lock.release()
            return False
        self._fd = fd
        self._depth = 1
        self._journal_end = 0
        self._outer = held_lock()
        _HOLDING.lock = self
        # Best effort: doctor finds what is left, and the lock is held either way.
        with suppress(OSError):
            self._clean_after_killed_writer(fd)
        return True

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fd, self._fd = self._fd, None
            _HOLDING.lock, self._outer = self._outer, None
            if self._journal_end:
                # Every temp file noted was renamed or removed: nothing to clean. (Left
                # as it is if that fails, the next holder finds nothing to remove.)
                self._journal_end = 0
                with suppress(OSError):
                    os.ftruncate(fd, 0)
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        self._thread_lock.release()

    def journal(self, temp: Path) -> None:
        """Note ``temp`` (about to be made) in the lock file: if this process dies before
        it is renamed, the next holder of the lock removes it."""
        if self._fd is None:
            return
        line = (os.path.relpath(temp, self.root) + "\n").encode("utf-8", "surrogateescape")
        self._journal_end += os.pwrite(self._fd, line, self._journal_end)

    def _clean_after_killed_writer(self, fd: int) -> None:
        """Remove the temp files a killed holder noted and left (the lock just taken)."""
        chunks: list[bytes] = []
        while chunk := os.pread(fd, 65536, sum(map(len, chunks))):
            chunks.append(chunk)
        if not chunks:
            return
        for line in b"".join(chunks).decode("utf-8", "surrogateescape").splitlines():
            rel = os.path.normpath(line)
            if (
                os.path.isabs(rel)
                or rel.startswith("..")
                or not TEMP_FILE.fullmatch(os.path.basename(rel))
            ):
                continue  # only ever a temp file of ours, inside the vault
            try:
                os.unlink(self.root / rel)
            except OSError:
                continue  # renamed before the writer died, or already gone
            self.cleaned.append(rel)
            repairs.record(self.root, self.clock, "cleaned", rel, CLEANED_WHY)
        os.ftruncate(fd, 0)

    @property
    def held(self) -> bool:
        """True when this thread of this process holds the lock."""
        return self._depth > 0

    def timeout_error(self) -> UnavailableError:
        """The error a caller gets when the lock did not come in time."""
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


LOCK_TIMEOUT_ENV = "AGENT_MEM_VAULT_LOCK_TIMEOUT"


def lock_timeout_setting(env: Mapping[str, str] | None = None) -> float:
    """Seconds a write waits for another writer's lock: ``AGENT_MEM_VAULT_LOCK_TIMEOUT``,
    else 5. A vault on a slow shared disk, or many agents at once, may want more."""
    value = (os.environ if env is None else env).get(LOCK_TIMEOUT_ENV, "").strip()
    if not value:
        return 5.0
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 3600:
        raise InvalidInputError(
            f"{LOCK_TIMEOUT_ENV} must be a number of seconds above 0 and at most 3600, "
            f"not {value!r}",
            code="invalid_setting",
            field=LOCK_TIMEOUT_ENV,
        )
    return seconds


def held_lock() -> VaultLock | None:
    """The vault lock this thread holds now, if any."""
    lock: VaultLock | None = getattr(_HOLDING, "lock", None)
    return lock


def vault_lock(root: Path, timeout: float = 5.0) -> VaultLock:
    """The lock of the vault at ``root``, for writers outside ``Vault`` (run notes).

    Every file the package writes into a vault is written under this one lock,
    so ``doctor`` and ``reindex``, which take it too, never see a write in flight.
    """
    lock = root / LOCK_FILE
    lock.parent.mkdir(parents=True, exist_ok=True)
    return VaultLock(lock, timeout=timeout)


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _try_flock_or_close(fd: int) -> bool:
    """``_try_flock``, with ``fd`` closed when the lock is not had (or on an error)."""
    try:
        got = _try_flock(fd)
    except BaseException:
        os.close(fd)
        raise
    if not got:
        os.close(fd)
    return got


def _flock_or_give_up(fd: int, wait: float) -> bool:
    """Lock ``fd`` within ``wait`` seconds: True, or False with ``fd`` handed off.

    On False (and on an error) ``fd`` is closed, or owned by ``_flock_within``'s
    helper thread, which closes it the moment the lock comes.
    """
    try:
        if _try_flock(fd):
            return True
        if wait > 0:
            return _flock_within(fd, wait)
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)  # no time left to wait, so no helper thread either
    return False


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


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's bytes, hex: what a person was shown, to tell a change since."""
    import hashlib

    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def fsync_dir(path: Path) -> None:
    """Make a rename or a new entry in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temp_path(path: str, token: str) -> str:
    """The temp file ``atomic_write`` renames onto ``path`` (``/``-separated, relative
    or not): ``.<name>.<token>.tmp`` in the same folder.

    The one place that names it: the watcher knows a note this process wrote by the
    rename from this very name (``NoteWatcher.wrote``), and ``doctor`` and ``reindex``
    find the leftovers of a killed write by its pattern (``TEMP_FILE``).
    """
    folder, sep, name = path.rpartition("/")
    return f"{folder}{sep}.{name}.{token}.tmp"


def atomic_write(
    path: Path,
    text: str,
    *,
    durable: bool = True,
    mode: int | None = None,
    token: str | None = None,
) -> os.stat_result:
    """Replace ``path`` with ``text`` atomically; returns the new file's stat.

    The text goes to a temp file beside ``path`` (``temp_path``: ``.<name>.<8 hex>.tmp``,
    the pattern ``TEMP_FILE`` matches), is fsynced, renamed over ``path``, and the
    folder is fsynced so that the rename itself is durable. With
    ``durable=False`` the fsyncs are skipped: the write still survives the
    process being killed (the kernel has it), but not a power cut. ``mode``
    sets the new file's permission bits exactly (to keep those of the file it
    replaces); by default it is 0644 less the umask. ``token`` is the temp file's
    8 hex digits (random by default), for a caller that must know its name.
    """
    staged = stage(path, text, durable=durable, mode=mode, token=token)
    publish(path, staged.temp, durable=durable)
    return staged.stat


class Staged:
    """A temp file written in full beside its target, waiting for ``publish``."""

    __slots__ = ("stat", "temp")

    def __init__(self, temp: Path, stat: os.stat_result) -> None:
        self.temp = temp
        self.stat = stat


def stage(
    path: Path,
    text: str,
    *,
    durable: bool = True,
    mode: int | None = None,
    token: str | None = None,
) -> Staged:
    """The first half of ``atomic_write``: ``text`` in a temp file beside ``path``, fsynced.

    Nothing is visible yet; a failure (a full disk) removes the temp file and
    leaves everything as it was. Under the vault lock, the temp file is noted in
    the lock's journal first (see the module doc). An error names ``path``, the
    note the caller wrote, rather than its temp file.
    """
    tmp = Path(temp_path(str(path), token or secrets.token_hex(4)))
    lock = held_lock()
    try:
        if lock is not None:
            lock.journal(tmp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            try:
                if mode is not None:
                    os.fchmod(fd, mode)
                view = memoryview(text.encode("utf-8"))
                while view:
                    view = view[os.write(fd, view) :]
                if durable:
                    os.fsync(fd)
                stat = os.fstat(fd)
            finally:
                os.close(fd)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    except OSError as exc:
        exc.filename = str(path)
        raise
    return Staged(tmp, stat)


def publish(path: Path, temp: Path, *, durable: bool = True) -> None:
    """The second half of ``atomic_write``: ``temp`` renamed over ``path`` (a rename
    needs no new space, so once every note of a change is staged, the change is
    made whole or, if the process dies, doctor reports the part that is missing)."""
    try:
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)
