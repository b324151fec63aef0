"""SQLite persistence: the embedded default, one file, safe for many processes.

WAL mode with ``synchronous=FULL``: a write that returned is on disk, so a
process killed right after an acknowledgement loses nothing. Writes go
through one writer thread that commits them in groups (:mod:`.sqlite_writer`:
its transactions, its errors, how it closes). Reads use a second connection on
the loop; in WAL mode they never wait for a writer.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..core.clock import SYSTEM_CLOCK, Clock
from ..core.disk import sqlite_failure
from ..core.errors import DataError, UnavailableError
from .backend import Backend, Claim, Encoded, check_version, written
from .base import Doc, Lease, LogConflictError, LogRecord
from .migrations import SQLITE_MIGRATIONS, apply_sqlite_migrations
from .sqlite_writer import SqliteWriter, is_busy
from .wakeups import Wakeups

__all__ = ["SqlitePersistence", "sqlite_persistence"]

_POLL_SECONDS = 0.05
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NOT_THE_FILE = frozenset({"no_space", "permission_denied"})
"""Failures of the disk under the file (``core.disk``), not of the file itself."""


def _to_micros(value: datetime) -> int:
    return (value - _EPOCH) // timedelta(microseconds=1)


def _from_micros(value: int) -> datetime:
    return _EPOCH + timedelta(microseconds=value)


class SqlitePersistence(Backend):
    def __init__(
        self, path: str | Path, *, clock: Clock = SYSTEM_CLOCK, busy_timeout: float = 5.0
    ) -> None:
        self.path = Path(path)
        self._clock = clock
        self._busy_timeout = busy_timeout
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = self._open_checked()
        self._rconn = self._connect()
        self._rlock = threading.Lock()
        self._wakeups = Wakeups()

    def _open_checked(self) -> SqliteWriter:
        """The writer, on a file that is a database with an up-to-date schema."""
        conn: sqlite3.Connection | None = None
        try:
            conn = self._connect()
            conn.execute("PRAGMA journal_mode=WAL")
            writer = SqliteWriter(self.path, conn, self._busy_timeout)
            with writer.write() as writing:
                apply_sqlite_migrations(writing, SQLITE_MIGRATIONS)
            return writer
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            if is_busy(exc):
                raise UnavailableError(
                    f"the database {self.path} stayed locked for more than "
                    f"{self._busy_timeout:g}s while opening; another process holds it — retry",
                    code="lock_timeout",
                ) from exc
            failure = sqlite_failure(exc, self.path, what="nothing was changed")
            if failure.code in _NOT_THE_FILE:
                raise failure from exc
            raise DataError(
                f"{self.path} cannot be used as a store ({exc}): point to another file, or "
                "restore this one from a backup",
                code="store_unreadable",
            ) from exc
        except BaseException:
            if conn is not None:
                conn.close()
            raise

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=self._busy_timeout
        )
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute(f"PRAGMA busy_timeout={int(self._busy_timeout * 1000)}")
        return conn

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        with self._rlock:
            if self._writer.closed:
                raise self._writer.closed_error()
            try:
                return self._rconn.execute(sql, args).fetchall()
            except sqlite3.DatabaseError as exc:
                failure = sqlite_failure(exc, self.path, what="nothing was changed")
                if failure.code in _NOT_THE_FILE:
                    raise failure from exc
                raise DataError(f"could not read {self.path}: {exc}") from exc

    # -- logs ---------------------------------------------------------------
    async def _append(
        self, stream: str, records: Encoded, expected_seq: int | None
    ) -> list[LogRecord]:
        now = self._clock.now()

        def tx(conn: sqlite3.Connection) -> int:
            return _append_rows(conn, stream, records, expected_seq, now)

        last = await self._writer.transact(tx)
        self._wakeups.wake(stream)
        return written(stream, last, records, now)

    async def _append_owned(
        self, stream: str, records: Encoded, expected_seq: int | None, claim: Claim
    ) -> tuple[list[LogRecord], Lease]:
        lease, owner, ttl = claim.name, claim.owner, claim.ttl

        now = self._clock.now()

        def tx(conn: sqlite3.Connection) -> tuple[int | None, Lease]:
            held = _lease_row(conn, lease, owner, now)
            if isinstance(held, Lease):
                return None, held  # somebody else's: nothing changes
            last = _append_rows(conn, stream, records, expected_seq, now)
            return last, _put_lease(conn, lease, owner, ttl, now, held)

        last, taken = await self._writer.transact(tx)
        if last is None:
            return [], taken
        self._wakeups.wake(stream)
        return written(stream, last, records, now), taken

    async def read(
        self, stream: str, *, after: int = 0, limit: int | None = None
    ) -> list[LogRecord]:
        rows = self._query(
            "SELECT seq, type, data, at FROM logs WHERE stream = ? AND seq > ? ORDER BY seq"
            + (" LIMIT ?" if limit is not None else ""),
            (stream, after, limit) if limit is not None else (stream, after),
        )
        return [LogRecord(stream, s, t, json.loads(d), _from_micros(a)) for s, t, d, a in rows]

    async def last_seq(self, stream: str) -> int:
        (row,) = self._query("SELECT COALESCE(MAX(seq), 0) FROM logs WHERE stream = ?", (stream,))
        return int(row[0])

    async def watch(self, stream: str, *, after: int = 0) -> AsyncIterator[LogRecord]:
        while True:
            # Registered before the read: an append that commits during the
            # read still wakes the next round.
            fut = self._wakeups.register(stream)
            try:
                fresh = await self.read(stream, after=after)
                for record in fresh:
                    after = record.seq
                    yield record
                if not fresh:
                    # In-process appends wake us at once; other processes'
                    # appends are seen by polling, cheap on an indexed primary key.
                    with suppress(TimeoutError):
                        await asyncio.wait_for(asyncio.shield(fut), _POLL_SECONDS)
            finally:
                self._wakeups.discard(stream, fut)

    # -- documents ----------------------------------------------------------
    async def get(self, collection: str, key: str) -> Doc | None:
        rows = self._query(
            "SELECT value, version FROM docs WHERE collection = ? AND key = ?", (collection, key)
        )
        if not rows:
            return None
        value, version = rows[0]
        return Doc(collection, key, json.loads(value), version)

    async def _insert(self, collection: str, key: str, text: str) -> tuple[Doc, bool]:
        def tx(conn: sqlite3.Connection) -> tuple[Doc, bool]:
            row = conn.execute(
                "SELECT value, version FROM docs WHERE collection = ? AND key = ?",
                (collection, key),
            ).fetchone()
            if row is not None:
                return Doc(collection, key, json.loads(row[0]), row[1]), False
            conn.execute(
                "INSERT INTO docs (collection, key, value, version) VALUES (?, ?, ?, 1)",
                (collection, key, text),
            )
            return Doc(collection, key, json.loads(text), 1), True

        return await self._writer.transact(tx)

    async def _put(self, collection: str, key: str, text: str, expected: int | None) -> Doc:
        def tx(conn: sqlite3.Connection) -> Doc:
            current = _version(conn, collection, key, expected)
            conn.execute(
                "INSERT INTO docs (collection, key, value, version) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (collection, key) DO UPDATE SET value = excluded.value, "
                "version = excluded.version",
                (collection, key, text, current + 1),
            )
            return Doc(collection, key, json.loads(text), current + 1)

        return await self._writer.transact(tx)

    async def delete(
        self, collection: str, key: str, *, expected_version: int | None = None
    ) -> bool:
        def tx(conn: sqlite3.Connection) -> bool:
            if not _version(conn, collection, key, expected_version):
                return False
            conn.execute("DELETE FROM docs WHERE collection = ? AND key = ?", (collection, key))
            return True

        return await self._writer.transact(tx)

    async def scan(
        self, collection: str, *, prefix: str = "", after: str | None = None, limit: int = 1000
    ) -> list[Doc]:
        # Range bounds instead of LIKE so the primary key index serves the scan
        # and '%' or '_' in a prefix mean themselves.
        lower = max(prefix, after) if after is not None else prefix
        op = ">" if after is not None and after >= prefix else ">="
        rows = self._query(
            f"SELECT key, value, version FROM docs WHERE collection = ? AND key {op} ? "
            "ORDER BY key LIMIT ?",
            (collection, lower, limit),
        )
        out = []
        for key, value, version in rows:
            if not key.startswith(prefix):
                break
            out.append(Doc(collection, key, json.loads(value), version))
        return out

    # -- leases -------------------------------------------------------------
    async def _acquire_lease(self, name: str, owner: str, ttl: float) -> Lease:
        now = self._clock.now()

        def tx(conn: sqlite3.Connection) -> Lease:
            held = _lease_row(conn, name, owner, now)
            if isinstance(held, Lease):
                return held
            return _put_lease(conn, name, owner, ttl, now, held)

        return await self._writer.transact(tx)

    async def _release_lease(self, name: str, owner: str) -> bool:
        now = _to_micros(self._clock.now())

        def tx(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "UPDATE leases SET owner = '', expires_at = ? WHERE name = ? AND owner = ?",
                (now, name, owner),
            )
            return cur.rowcount > 0

        return await self._writer.transact(tx)

    async def get_lease(self, name: str) -> Lease | None:
        rows = self._query("SELECT owner, expires_at, token FROM leases WHERE name = ?", (name,))
        if not rows:
            return None
        owner, until, token = rows[0]
        if not owner or until <= _to_micros(self._clock.now()):
            return None
        return Lease(name, owner, _from_micros(until), token)

    async def close(self) -> None:
        """Refuse new writes, let every queued write commit (or fail), then close.

        Safe to call from any thread's loop while others write; a second call
        is harmless.
        """
        await self._writer.close()
        # No write can start again: nothing waits for this lock but a read in flight.
        with self._rlock:
            self._rconn.close()


def _append_rows(
    conn: sqlite3.Connection,
    stream: str,
    records: Encoded,
    expected_seq: int | None,
    now: datetime,
) -> int:
    """Insert ``records`` after the stream's last record (which must be ``expected_seq``)."""
    (last,) = conn.execute(
        "SELECT COALESCE(MAX(seq), 0) FROM logs WHERE stream = ?", (stream,)
    ).fetchone()
    if expected_seq is not None and last != expected_seq:
        raise LogConflictError.at(stream, expected_seq=expected_seq, last_seq=last)
    at = _to_micros(now)
    conn.executemany(
        "INSERT INTO logs (stream, seq, type, data, at) VALUES (?, ?, ?, ?, ?)",
        [(stream, last + i + 1, t, text, at) for i, (t, text) in enumerate(records)],
    )
    return int(last)


def _version(conn: sqlite3.Connection, collection: str, key: str, expected: int | None) -> int:
    """A document's version (0: absent), refused unless it is ``expected``."""
    row = conn.execute(
        "SELECT version FROM docs WHERE collection = ? AND key = ?", (collection, key)
    ).fetchone()
    current = int(row[0]) if row else 0
    check_version(collection, key, expected, current)
    return current


def _lease_row(conn: sqlite3.Connection, name: str, owner: str, now: datetime) -> Lease | int:
    """Somebody else's unexpired lease, or the token ``owner`` takes the lease with."""
    row = conn.execute(
        "SELECT owner, expires_at, token FROM leases WHERE name = ?", (name,)
    ).fetchone()
    if row is None:
        return 1
    held_owner, held_until, token = row
    if held_owner and held_owner != owner and held_until > _to_micros(now):
        return Lease(name, held_owner, _from_micros(held_until), token)
    return int(token) if held_owner == owner else int(token) + 1


def _put_lease(
    conn: sqlite3.Connection, name: str, owner: str, ttl: float, now: datetime, token: int
) -> Lease:
    expires = now + timedelta(seconds=ttl)
    conn.execute(
        "INSERT INTO leases (name, owner, expires_at, token) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, "
        "expires_at = excluded.expires_at, token = excluded.token",
        (name, owner, _to_micros(expires), token),
    )
    return Lease(name, owner, expires, token)


def sqlite_persistence(
    path: str | Path, *, clock: Clock = SYSTEM_CLOCK, busy_timeout: float = 5.0
) -> SqlitePersistence:
    """A persistence in one SQLite file, shared safely by many processes.

    >>> store = sqlite_persistence("harness.db")  # doctest: +SKIP
    """
    return SqlitePersistence(path, clock=clock, busy_timeout=busy_timeout)
