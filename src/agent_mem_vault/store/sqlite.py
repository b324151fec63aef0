"""SQLite persistence: the embedded default, one file, safe for many processes.

WAL mode with ``synchronous=FULL``: a write that returned is on disk, so a
process killed right after an acknowledgement loses nothing. Every write runs
in ``BEGIN IMMEDIATE`` so that the check (expected sequence, expected version,
lease holder) and the write happen under one database lock, across processes.

Writes run on a worker thread with their own connection: waiting for the file
lock (up to ``busy_timeout``) or for fsync then never stalls the event loop,
which may be serving other threads' events. Reads use a second connection on
the loop; in WAL mode they never wait for a writer.

**Group commit.** Writes that arrive while the writer thread commits wait
and then go together: one transaction, one fsync, each write in its own
savepoint, so a write that fails (a conflict) undoes only itself (a write
alone in its batch needs no savepoint: its transaction is its own). Every write
is acknowledged only after the commit that holds it; with one writer at a
time nothing changes, and under concurrency a host commits many threads'
appends for the price of one.

Some errors end the whole transaction, not just the statement: a disk I/O
error, a full disk, a trigger that raises ``ROLLBACK``. A full disk is
``no_space`` wherever it is met (opening, writing, committing, reading). Then nothing of the
batch was committed, and no write can tell whether the error was its own, so
each write of the batch runs again alone, in a fresh transaction: it commits
at most once (the first attempt was rolled back), and a write that fails
alone gets the error, with what SQLite said. A failed ``COMMIT`` is never
retried: the commit may have reached the disk, so every write of the batch
fails with ``store_commit_failed`` and is never acknowledged.

**Closing.** ``close`` refuses new writes (``store_closed``), waits until the
writer thread has committed or failed every write already queued, then
closes the connections: no write is left waiting, none is acknowledged
without its commit.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from ..core.clock import SYSTEM_CLOCK, Clock
from ..core.disk import result_code, sqlite_failure
from ..core.errors import AgentMemVaultError, DataError, UnavailableError
from .base import Doc, Lease, LogConflictError, LogRecord, VersionConflictError, check_name
from .migrations import SQLITE_MIGRATIONS, apply_sqlite_migrations
from .wakeups import Wakeups

__all__ = ["SqlitePersistence", "sqlite_persistence"]

_POLL_SECONDS = 0.05
# How long the writer thread waits for a write before it ends (the next starts another).
_WRITER_IDLE_SECONDS = 30.0
T = TypeVar("T")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NOT_THE_FILE = frozenset({"no_space", "permission_denied"})
"""Failures of the disk under the file (``core.disk``), not of the file itself."""


def _to_micros(value: datetime) -> int:
    return (value - _EPOCH) // timedelta(microseconds=1)


def _from_micros(value: int) -> datetime:
    return _EPOCH + timedelta(microseconds=value)


# allow_nan=False: NaN and Infinity are not JSON; other readers of the file
# (and the PostgreSQL backend) would refuse them. One encoder for every write:
# ``json.dumps`` with options builds a new one per call, a third of its cost.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _dump(value: Mapping[str, Any]) -> str:
    return _ENCODER.encode(value)


class SqlitePersistence:
    def __init__(
        self, path: str | Path, *, clock: Clock = SYSTEM_CLOCK, busy_timeout: float = 5.0
    ) -> None:
        self.path = Path(path)
        self._clock = clock
        self._busy_timeout = busy_timeout
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # Writes waiting for the writer thread: (body, future, its loop).
        self._queued: list[tuple[Callable[[sqlite3.Connection], Any], Any, Any]] = []
        self._queue_lock = threading.Lock()
        # The writer thread waits on this when nothing is queued: held, it blocks
        # the writer; a write releases it. A lock, not a ``Condition``: a
        # Condition's ``notify`` is Python code the event loop runs per write.
        self._wake = threading.Lock()
        self._wake.acquire()
        self._writer: threading.Thread | None = None
        self._writer_waits = False
        self._writing = False
        self._closed = False
        # close() calls waiting for the writer thread to go idle: (future, its loop).
        self._idle_waiters: list[tuple[Any, Any]] = []
        self._conn = self._open_checked()
        self._rconn = self._connect()
        self._rlock = threading.Lock()
        self._wakeups = Wakeups()

    def _open_checked(self) -> sqlite3.Connection:
        """The writer connection, on a file that is a database with an up-to-date schema."""
        conn: sqlite3.Connection | None = None
        try:
            conn = self._connect()
            conn.execute("PRAGMA journal_mode=WAL")
            self._conn = conn
            with self._write() as writer:
                apply_sqlite_migrations(writer, SQLITE_MIGRATIONS)
            return conn
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            if _is_busy(exc):
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

    async def _transact(self, body: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``body`` in a write transaction on the writer thread; see group commit above."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        with self._queue_lock:
            if self._closed:
                raise self._closed_error()
            self._queued.append((body, done, loop))
            self._writing = True
            thread = None
            if self._writer is None:
                thread = self._writer = threading.Thread(
                    target=self._write_queued, name=f"sqlite-writer {self.path.name}", daemon=True
                )
            elif self._writer_waits:
                self._signal_writer()
        if thread is not None:
            try:
                thread.start()
            except BaseException:  # no writer thread: nothing would ever settle the queue
                self._fail_queued()
                raise
        return await done

    def _write_queued(self) -> None:
        """The writer thread: commit what waits, batch by batch, for as long as it is used.

        One thread for the store's life, not one per burst of writes: starting
        a thread (or submitting to a pool) whenever the queue ran dry cost the
        event loop more than the write's own Python. It ends after
        ``_WRITER_IDLE_SECONDS`` without a write (a store left open costs no
        thread) and when the store closes; the next write starts another.
        """
        finished = False
        try:
            self._write_batches()
            finished = True
        finally:
            if not finished:  # an error of our own: fail what waits, let the next write start
                self._fail_queued()

    def _signal_writer(self) -> None:
        """Wake the writer thread that waits for a write (queue lock held)."""
        self._writer_waits = False
        self._wake.release()

    def _fail_queued(self) -> None:
        """Fail every write that waits, so that the next write starts a writer again."""
        with self._queue_lock:
            for _, done, loop in self._queued:
                with suppress(RuntimeError):
                    error = UnavailableError("the SQLite writer stopped; retry the write")
                    loop.call_soon_threadsafe(_settle, done, None, error)
            self._queued = []
            self._writer = None
            self._go_idle()

    def _go_idle(self) -> None:
        """Nothing is queued (queue lock held): wake the ``close`` calls waiting for that."""
        self._writing = False
        for done, loop in self._idle_waiters:
            with suppress(RuntimeError):  # that close's loop has gone
                loop.call_soon_threadsafe(_settle, done, None, None)
        self._idle_waiters = []

    def _next_batch(self) -> list[tuple[Callable[[sqlite3.Connection], Any], Any, Any]]:
        """What waits, once there is something; empty when the thread is to end."""
        with self._queue_lock:
            while not self._queued:
                if self._writing:
                    self._go_idle()
                if self._closed:
                    self._writer = None
                    return []
                self._writer_waits = True
                self._queue_lock.release()
                try:
                    woken = self._wake.acquire(timeout=_WRITER_IDLE_SECONDS)
                finally:
                    self._queue_lock.acquire()
                    if self._writer_waits:  # nobody signalled (a timeout, or an error)
                        self._writer_waits = False
                    elif not woken:  # signalled as the wait timed out: take the signal back
                        woken = self._wake.acquire(blocking=False)
                # The wake lock is held again: only a thread that waits is signalled.
                if not woken and not self._queued:
                    self._writer = None
                    return []
            batch, self._queued = self._queued, []
            return batch

    def _write_batches(self) -> None:
        while batch := self._next_batch():
            outcomes = self._commit_together(batch)
            if outcomes is None:  # SQLite ended the batch's transaction: each write alone
                outcomes = [o for write in batch for o in self._commit_together([write]) or ()]
            # One wake-up per caller's loop and batch, not one per write.
            by_loop: dict[Any, list[tuple[Any, Any, BaseException | None]]] = {}
            for done, loop, result, error in outcomes:
                by_loop.setdefault(loop, []).append((done, result, error))
            for loop, settled in by_loop.items():
                with suppress(RuntimeError):  # the caller's loop has closed
                    loop.call_soon_threadsafe(_settle_all, settled)

    def _commit_together(
        self, batch: list[tuple[Callable[[sqlite3.Connection], Any], Any, Any]]
    ) -> list[tuple[Any, Any, Any, BaseException | None]] | None:
        """Each write's outcome, after one transaction that holds the whole batch.

        ``None`` when SQLite ended the transaction under a batch of several
        writes: nothing of it was committed, and the caller runs each alone.
        """
        if len(batch) == 1:
            return [self._commit_alone(*batch[0])]
        outcomes: list[tuple[Any, Any, Any, BaseException | None]] = []
        try:
            with self._write() as conn:
                for body, done, loop in batch:
                    conn.execute("SAVEPOINT write")
                    try:
                        result = body(conn)
                    except Exception as exc:
                        if not conn.in_transaction:  # rolled back whole, the savepoint with it
                            raise _TransactionEndedError from exc
                        conn.execute("ROLLBACK TO write")
                        conn.execute("RELEASE write")
                        outcomes.append((done, loop, None, self._write_error(exc, False)))
                    else:
                        conn.execute("RELEASE write")
                        outcomes.append((done, loop, result, None))
        except _TransactionEndedError as ended:
            if len(batch) > 1:
                return None
            error = self._write_error(ended.__cause__ or ended, True)
            return [(done, loop, None, error) for _, done, loop in batch]
        except BaseException as exc:  # the transaction failed as a whole; nothing acknowledged
            error = self._write_error(exc, True)
            return [(done, loop, None, error) for _, done, loop in batch]
        return outcomes

    def _commit_alone(
        self, body: Callable[[sqlite3.Connection], Any], done: Any, loop: Any
    ) -> tuple[Any, Any, Any, BaseException | None]:
        """One write in its own transaction, without a savepoint: its error undoes all of it."""
        ended = True  # unless the body's own error left the transaction open
        try:
            with self._write() as conn:
                try:
                    result = body(conn)
                except Exception:
                    ended = not conn.in_transaction
                    raise
        except BaseException as exc:
            return done, loop, None, self._write_error(exc, ended)
        return done, loop, result, None

    def _write_error(self, exc: BaseException, ended: bool) -> BaseException:
        """What a write's caller gets for ``exc``: the package's errors pass unchanged.

        A SQLite error becomes one that names the file and what SQLite said;
        ``ended`` says SQLite rolled the whole transaction back.
        """
        if not isinstance(exc, sqlite3.Error):
            return exc
        undone = "SQLite rolled back the transaction" if ended else "the write was undone"
        if sqlite_failure(exc, self.path).code == "no_space":
            error: AgentMemVaultError = UnavailableError(
                f"could not write to {self.path}: the database or its disk is full ({exc}); "
                f"{undone}, so nothing of this write was saved — free space, then retry",
                code="no_space",
            )
        else:
            error = DataError(
                f"could not write to {self.path}: {exc}; {undone}, so nothing of this write "
                "was saved — check the disk and the file (triggers, permissions), then retry",
                code="store_write_failed",
            )
        error.__cause__ = exc
        return error

    def _closed_error(self) -> UnavailableError:
        return UnavailableError(
            f"the store {self.path} is closed; open it again to use it", code="store_closed"
        )

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction under the database's write lock."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if _is_busy(exc):
                    raise UnavailableError(
                        f"the database {self.path} stayed locked for more than "
                        f"{self._busy_timeout:g}s; another process holds it — retry",
                        code="lock_timeout",
                    ) from exc
                raise
            try:
                yield self._conn
            except BaseException:
                # SQLite may have rolled back already (I/O error, a trigger's
                # ROLLBACK); the error that ended the body is the one to report.
                if self._conn.in_transaction:
                    with suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                # A failed COMMIT (disk full, I/O error) leaves the transaction
                # open; without this every later BEGIN on this handle would fail.
                if self._conn.in_transaction:
                    with suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                raise self._commit_error(exc) from exc

    def _commit_error(self, exc: sqlite3.Error) -> AgentMemVaultError:
        """What every write of a batch gets when its COMMIT fails.

        ``SQLITE_FULL``: the log's commit frame could not be written, so nothing of
        the batch is on disk (``no_space``, retry). Any other error may have come
        after the commit reached the disk (a failed fsync, a shared-memory file
        that could not grow): ``no_space`` if the disk is full, else
        ``store_commit_failed``, and either way "may or may not be on disk".
        """
        maybe = (
            "the write was not acknowledged and may or may not be on disk — read it back "
            "before writing it again"
        )
        if result_code(exc) == sqlite3.SQLITE_FULL:
            return UnavailableError(
                f"could not commit to {self.path}: the disk holding it is full ({exc}); "
                "nothing of this write was saved — free space, then retry",
                code="no_space",
            )
        if sqlite_failure(exc, self.path).code == "no_space":
            return UnavailableError(
                f"could not commit to {self.path}: the disk holding it is full ({exc}); "
                f"{maybe}, once space is freed",
                code="no_space",
            )
        return DataError(
            f"could not commit to {self.path}: {exc}; {maybe}", code="store_commit_failed"
        )

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        with self._rlock:
            if self._closed:
                raise self._closed_error()
            try:
                return self._rconn.execute(sql, args).fetchall()
            except sqlite3.DatabaseError as exc:
                failure = sqlite_failure(exc, self.path, what="nothing was changed")
                if failure.code in _NOT_THE_FILE:
                    raise failure from exc
                raise DataError(f"could not read {self.path}: {exc}") from exc

    # -- logs ---------------------------------------------------------------
    async def append(
        self,
        stream: str,
        records: Sequence[tuple[str, Mapping[str, Any]]],
        *,
        expected_seq: int | None = None,
    ) -> list[LogRecord]:
        check_name("stream", stream)
        prepared = [(check_name("record type", t), _dump(d)) for t, d in records]
        now = self._clock.now()

        def tx(conn: sqlite3.Connection) -> int:
            return _append_rows(conn, stream, prepared, expected_seq, now)

        last = await self._transact(tx)
        self._wakeups.wake(stream)
        return _written(stream, last, prepared, now)

    async def append_owned(
        self,
        stream: str,
        records: Sequence[tuple[str, Mapping[str, Any]]],
        *,
        expected_seq: int | None,
        lease: str,
        owner: str,
        ttl: float,
    ) -> tuple[list[LogRecord], Lease]:
        check_name("stream", stream)
        check_name("lease", lease)
        check_name("owner", owner)
        prepared = [(check_name("record type", t), _dump(d)) for t, d in records]
        now = self._clock.now()

        def tx(conn: sqlite3.Connection) -> tuple[int | None, Lease]:
            held = _lease_row(conn, lease, owner, now)
            if isinstance(held, Lease):
                return None, held  # somebody else's: nothing changes
            last = _append_rows(conn, stream, prepared, expected_seq, now)
            return last, _put_lease(conn, lease, owner, ttl, now, held)

        last, taken = await self._transact(tx)
        if last is None:
            return [], taken
        self._wakeups.wake(stream)
        return _written(stream, last, prepared, now), taken

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

    async def insert(self, collection: str, key: str, value: Mapping[str, Any]) -> tuple[Doc, bool]:
        check_name("collection", collection)
        check_name("key", key)
        text = _dump(value)

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

        return await self._transact(tx)

    async def put(
        self,
        collection: str,
        key: str,
        value: Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> Doc:
        check_name("collection", collection)
        check_name("key", key)
        text = _dump(value)

        def tx(conn: sqlite3.Connection) -> Doc:
            row = conn.execute(
                "SELECT version FROM docs WHERE collection = ? AND key = ?", (collection, key)
            ).fetchone()
            current = row[0] if row else 0
            if expected_version is not None and expected_version != current:
                raise VersionConflictError.at(
                    collection, key, expected=expected_version, current=current
                )
            conn.execute(
                "INSERT INTO docs (collection, key, value, version) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (collection, key) DO UPDATE SET value = excluded.value, "
                "version = excluded.version",
                (collection, key, text, current + 1),
            )
            return Doc(collection, key, json.loads(text), current + 1)

        return await self._transact(tx)

    async def delete(
        self, collection: str, key: str, *, expected_version: int | None = None
    ) -> bool:
        def tx(conn: sqlite3.Connection) -> bool:
            row = conn.execute(
                "SELECT version FROM docs WHERE collection = ? AND key = ?", (collection, key)
            ).fetchone()
            current = row[0] if row else 0
            if expected_version is not None and expected_version != current:
                raise VersionConflictError.at(
                    collection, key, expected=expected_version, current=current
                )
            if row is None:
                return False
            conn.execute("DELETE FROM docs WHERE collection = ? AND key = ?", (collection, key))
            return True

        return await self._transact(tx)

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
    async def acquire_lease(self, name: str, owner: str, ttl: float) -> Lease:
        check_name("lease", name)
        check_name("owner", owner)
        now = self._clock.now()

        def tx(conn: sqlite3.Connection) -> Lease:
            held = _lease_row(conn, name, owner, now)
            if isinstance(held, Lease):
                return held
            return _put_lease(conn, name, owner, ttl, now, held)

        return await self._transact(tx)

    async def release_lease(self, name: str, owner: str) -> bool:
        # An empty owner is what a released lease holds; it must not "release" it.
        check_name("owner", owner)
        now = _to_micros(self._clock.now())

        def tx(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "UPDATE leases SET owner = '', expires_at = ? WHERE name = ? AND owner = ?",
                (now, name, owner),
            )
            return cur.rowcount > 0

        return await self._transact(tx)

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
        loop = asyncio.get_running_loop()
        idle: asyncio.Future[None] = loop.create_future()
        with self._queue_lock:
            self._closed = True
            if self._writer_waits:
                self._signal_writer()  # its thread ends; nothing is queued
            if self._writing:
                self._idle_waiters.append((idle, loop))
            else:
                idle.set_result(None)
        await idle
        # The writer thread is idle and no write can start again: nothing
        # waits for these locks but a read in flight.
        with self._lock:
            self._conn.close()
        with self._rlock:
            self._rconn.close()


def _append_rows(
    conn: sqlite3.Connection,
    stream: str,
    prepared: list[tuple[str, str]],
    expected_seq: int | None,
    now: datetime,
) -> int:
    """Insert ``prepared`` after the stream's last record (which must be ``expected_seq``)."""
    (last,) = conn.execute(
        "SELECT COALESCE(MAX(seq), 0) FROM logs WHERE stream = ?", (stream,)
    ).fetchone()
    if expected_seq is not None and last != expected_seq:
        raise LogConflictError.at(stream, expected_seq=expected_seq, last_seq=last)
    at = _to_micros(now)
    conn.executemany(
        "INSERT INTO logs (stream, seq, type, data, at) VALUES (?, ?, ?, ?, ?)",
        [(stream, last + i + 1, t, text, at) for i, (t, text) in enumerate(prepared)],
    )
    return int(last)


def _written(
    stream: str, last: int, prepared: list[tuple[str, str]], now: datetime
) -> list[LogRecord]:
    return [
        LogRecord(stream, last + i + 1, t, json.loads(text), now)
        for i, (t, text) in enumerate(prepared)
    ]


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


class _TransactionEndedError(Exception):
    """SQLite rolled back the whole transaction under a write (its cause says why)."""


def _settle(done: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if done.done():
        return  # the caller was cancelled; the write stands, as a commit does
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)


def _settle_all(settled: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
    for done, result, error in settled:
        _settle(done, result, error)


def _is_busy(exc: sqlite3.Error) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and (
        "locked" in str(exc) or "busy" in str(exc)
    )


def sqlite_persistence(
    path: str | Path, *, clock: Clock = SYSTEM_CLOCK, busy_timeout: float = 5.0
) -> SqlitePersistence:
    """A persistence in one SQLite file, shared safely by many processes.

    >>> store = sqlite_persistence("harness.db")  # doctest: +SKIP
    """
    return SqlitePersistence(path, clock=clock, busy_timeout=busy_timeout)
