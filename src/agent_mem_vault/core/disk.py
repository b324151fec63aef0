"""What a failing disk looks like, told apart from damaged data.

SQLite reports a full disk in more than one way: ``SQLITE_FULL`` when a write
to the database or its journal meets ``ENOSPC``, but ``SQLITE_IOERR`` (a "disk
I/O error") when the shared-memory file of a write-ahead log cannot grow, and
``SQLITE_CANTOPEN`` when the log cannot be made at all. Taken for damage, such
an error once made the vault delete its index; taken for a bug, it reached the
user as ``internal_error``. :func:`sqlite_failure` turns every SQLite error
into the package's error tree by its result code, and by how full the
filesystem under the file is when the code alone cannot tell:

    SQLITE_FULL, or an I/O error on a full filesystem   → no_space        (exit 6)
    SQLITE_READONLY, or an I/O error on a read-only one → permission_denied (exit 5)
    SQLITE_CANTOPEN on a folder                         → bad_path        (exit 2)
    SQLITE_BUSY / SQLITE_LOCKED                         → lock_timeout    (exit 6)
    SQLITE_CORRUPT / SQLITE_NOTADB                      → file_damaged    (exit 7)
    any other I/O error                                 → io_error        (exit 7)
    anything else (a statement SQLite refused: a bug)   → database_error  (exit 7)

Only :func:`is_damage` errors justify rebuilding a derived file; an I/O error
never does, since the rebuild would meet the same disk.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from contextlib import suppress
from pathlib import Path

from .errors import (
    AccessDeniedError,
    AgentMemVaultError,
    DataError,
    InvalidInputError,
    UnavailableError,
)

__all__ = [
    "disk_full",
    "is_damage",
    "read_only",
    "result_code",
    "roll_back_open",
    "sqlite_failure",
]

LOW_SPACE = 256 << 10
"""Free bytes below which a filesystem counts as full when an I/O error says no more:
SQLite alone needs 32 KiB to open a database in write-ahead-log mode."""

# Primary result codes (the low byte of an extended one), from sqlite3.h.
_BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 5, 6, 8, 10, 11, 13, 14, 26


def result_code(exc: sqlite3.Error) -> int:
    """SQLite's primary result code for ``exc`` (0 when SQLite gave none)."""
    return int(getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF


def is_damage(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says the file itself is damaged (not a database, malformed, or a
    database without the tables it should have): the one case where a derived file
    is rebuilt. Full disks, I/O errors and locks are never damage."""
    code = result_code(exc)
    if code in (_CORRUPT, _NOTADB):
        return True
    text = str(exc)
    if code == 0 and ("malformed" in text or "not a database" in text):
        return True  # an error raised without a result code (an old sqlite3 module)
    return "no such table" in text


def _existing(path: Path) -> Path:
    """``path`` or its nearest folder that exists (what ``statvfs`` can look at)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def disk_full(path: str | os.PathLike[str]) -> bool:
    """Whether the filesystem holding ``path`` has (almost) no space or no inodes left."""
    try:
        st = os.statvfs(_existing(Path(path)))
    except OSError:
        return False
    free = st.f_bavail if os.geteuid() != 0 else st.f_bfree  # root may use the reserve
    no_inodes = st.f_files > 0 and st.f_favail == 0
    return free * st.f_frsize < LOW_SPACE or no_inodes


def read_only(path: str | os.PathLike[str]) -> bool:
    """Whether the filesystem holding ``path`` is mounted read-only."""
    try:
        st = os.statvfs(_existing(Path(path)))
    except OSError:
        return False
    return bool(st.f_flag & os.ST_RDONLY)


def sqlite_failure(
    exc: sqlite3.Error, path: str | os.PathLike[str], *, what: str = ""
) -> AgentMemVaultError:
    """The error of the tree for SQLite's ``exc`` on the database at ``path``.

    ``what`` is appended to the message: what the failure means for the caller's
    data (for a derived index, that the notes are unchanged, say).

    >>> sqlite_failure(sqlite3.OperationalError("database or disk is full"), "/tmp").code
    'no_space'
    """
    code = result_code(exc)
    where = str(path)
    reason = " ".join(str(exc).split()) or type(exc).__name__
    tail = f"; {what}" if what else ""

    def failure(
        kind: type[AgentMemVaultError], message: str, code: str, number: int | None = None
    ) -> AgentMemVaultError:
        # Every message ends with ``what``; the errno's name goes with the ones that have one.
        named = {} if number is None else {"errno": errno.errorcode[number]}
        error = kind(message + tail, code=code, path=where, **named)
        error.__cause__ = exc
        return error

    io = code in (_IOERR, _CANTOPEN, _FULL, 0)
    if code == _FULL or "disk is full" in reason or (io and disk_full(where)):
        return failure(
            UnavailableError,
            f"the disk holding {where} is full ({reason}); free space on it, then retry",
            "no_space",
            errno.ENOSPC,
        )
    if code == _READONLY or (io and read_only(where)):
        return failure(
            AccessDeniedError,
            f"{where} is on a read-only filesystem ({reason}); remount it read-write or "
            "use a vault on a writable disk",
            "permission_denied",
            errno.EROFS,
        )
    if code == _CANTOPEN and os.path.isdir(where):
        return failure(
            InvalidInputError,
            f"a folder stands where the database file {where} belongs ({reason}); move it away",
            "bad_path",
            errno.EISDIR,
        )
    if code in (_BUSY, _LOCKED):
        return failure(
            UnavailableError,
            f"{where} stayed locked by another program ({reason}); retry",
            "lock_timeout",
        )
    if code in (_CORRUPT, _NOTADB) or is_damage(exc):
        return failure(
            DataError,
            f"{where} is damaged ({reason}); restore it from a backup or remove it",
            "file_damaged",
        )
    if code == _CANTOPEN:
        return failure(
            DataError,
            f"could not open {where} ({reason}); check that its folder exists and may be "
            "written, then retry",
            "io_error",
        )
    if io:
        return failure(
            DataError,
            f"reading or writing {where} failed ({reason}); check the disk (the kernel log "
            "says more: 'dmesg'), then retry",
            "io_error",
        )
    return failure(
        DataError,
        f"SQLite refused a statement on {where} ({reason}); this is a bug in "
        "agent-mem-vault: please report it",
        "database_error",
    )


def roll_back_open(conn: sqlite3.Connection) -> None:
    """Roll back the transaction a failure left open, if SQLite has not already.

    SQLite rolls back by itself on some errors (a full disk, an I/O error, a
    trigger's ``ROLLBACK``), and a failed ``COMMIT`` leaves the transaction open,
    which would make every later ``BEGIN`` on ``conn`` fail. A ``ROLLBACK`` that
    fails in turn is ignored: the error that ended the work is the one to report.
    """
    if conn.in_transaction:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
