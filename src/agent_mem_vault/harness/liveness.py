"""Which hosts on this machine are alive: an OS lock that dies with its process.

A thread's lease (:mod:`.threadlog`) keeps every other host off the thread
for ``lease_ttl`` after its owner's last write. That is the only safe rule
between machines, but on one machine it made a host that restarts after a
crash wait out its dead predecessor's leases (30 s by default).

So every host on a SQLite file holds an exclusive ``flock`` on its own file,
``<store>.hosts/<host id>.lock``, for as long as it lives. The kernel drops
that lock when the process ends, however it ends (SIGKILL included). When a
lease is held by another owner, a host tries to take that owner's lock
without waiting: if it gets it, the owner is dead, so the host releases the
dead owner's lease (only if it still holds it, in one statement) and takes it
at once; the stopped turn is then closed as its log says (:mod:`.takeover`).
An owner with no lock file here (another machine, or a host that closed)
is treated as alive: its lease still protects the thread.

Many hosts on PostgreSQL have no such files; the lease alone decides, on
every write.

The file is created under a temporary name, locked, then renamed into
place, so the name never points at an unlocked file of a live host. Files
of dead hosts stay (their leases may still be live) until a host starting
on the same store finds them dead and untouched for :data:`STALE_AFTER`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: leases alone decide
    fcntl = None  # type: ignore[assignment]

__all__ = ["STALE_AFTER", "HostLiveness", "liveness_for"]

_log = logging.getLogger(__name__)

STALE_AFTER = 24 * 3600.0
"""Seconds after its last lease renewal that a dead host's lock file is removed."""
_TOUCH_EVERY = 60.0
_SAFE = re.compile(r"[A-Za-z0-9._-]{1,100}")


def _file_name(host_id: str) -> str:
    if _SAFE.fullmatch(host_id) and not host_id.startswith("."):
        return f"{host_id}.lock"
    return f"{hashlib.sha256(host_id.encode()).hexdigest()[:32]}.lock"


class HostLiveness:
    """This host's lock file, and the test of whether another host here died."""

    def __init__(self, directory: Path, host_id: str) -> None:
        assert fcntl is not None
        self.directory = directory
        self.host_id = host_id
        directory.mkdir(parents=True, exist_ok=True)
        self._remove_stale()
        self.path = directory / _file_name(host_id)
        temporary = directory / f".{os.getpid()}.{id(self):x}.tmp"
        fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.write(fd, f"{host_id}\n{os.getpid()}\n".encode())
            os.replace(temporary, self.path)
        except BaseException:
            os.close(fd)
            temporary.unlink(missing_ok=True)
            raise
        self._fd: int | None = fd
        self._touched = time.monotonic()

    def is_dead(self, owner: str) -> bool:
        """Whether ``owner`` is a host of this machine whose process has ended."""
        if owner == self.host_id or not owner:
            return False
        try:
            fd = os.open(self.directory / _file_name(owner), os.O_RDONLY)
        except OSError:
            return False  # no file: another machine, or a host that closed
        try:
            assert fcntl is not None
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # locked: its process lives
        finally:
            os.close(fd)
        return True

    def touch(self) -> None:
        """Note a lease renewal (at most once a minute): stale files are judged by it."""
        now = time.monotonic()
        if self._fd is not None and now - self._touched >= _TOUCH_EVERY:
            self._touched = now
            os.utime(self._fd)

    def close(self) -> None:
        """Remove the file and drop the lock (the host gave its leases up first)."""
        if self._fd is None:
            return
        self.path.unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = None

    def _remove_stale(self) -> None:
        assert fcntl is not None
        cutoff = time.time() - STALE_AFTER
        for path in self.directory.glob("*.lock"):
            try:
                if path.stat().st_mtime >= cutoff:
                    continue
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                path.unlink(missing_ok=True)
            except OSError:
                pass
            finally:
                os.close(fd)


def liveness_for(persistence: Any, host_id: str) -> HostLiveness | None:
    """The liveness files of a store on one machine's disk (SQLite), else None."""
    from ..store.sqlite import SqlitePersistence

    if fcntl is None or not isinstance(persistence, SqlitePersistence):
        return None
    try:
        return HostLiveness(Path(f"{persistence.path}.hosts"), host_id)
    except OSError as exc:  # a read-only folder: the leases alone decide, as across machines
        _log.warning("no liveness lock beside %s (%s); leases alone decide", persistence.path, exc)
        return None
