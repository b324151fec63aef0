"""PostgreSQL persistence: one database shared by many hosts.

The contract is the one in :mod:`.base`; what PostgreSQL adds is how it holds
across machines:

* **Appends** are one autocommit statement. A per-stream counter row in
  ``streams`` is bumped with ``UPDATE``/upsert, which row-locks it until the
  statement commits, so two appends on one stream serialize and the second
  sees the first's counter: sequence numbers have no gaps and no duplicates,
  and commits become visible in sequence order. The ``(stream, seq)`` primary
  key of ``logs`` is the belt to those braces.
* **Time** for leases and log records comes from the database (``now()``), so
  hosts whose clocks disagree still agree on who holds a lease. A caller that
  injects its own clock (a ``ManualClock`` in tests) gets that clock instead,
  exactly as on the other backends.
* **Watching** uses ``LISTEN``/``NOTIFY`` (:mod:`.pg_notify`): each append
  is announced by a NOTIFY sent right after it committed, on the same
  connection, in a transaction of its own. Not inside the append: PostgreSQL
  holds one database-wide lock from a notifying transaction's pre-commit until
  its commit is flushed, which would serialise every host's appends behind
  each other's fsync. One listening connection per handle wakes the watches,
  and every wake-up is followed by a catch-up read from the last sequence
  number seen. A lost notification (a dropped connection, or a host that died
  between its append and its NOTIFY) is covered by a slow safety poll.
* **Schema** is versioned (:data:`.migrations.POSTGRES_MIGRATIONS`) and brought
  up to date on first use under an advisory lock, or by
  ``agent-mem-vault db upgrade``.
* **Connections die** (a failover, a proxy's idle timeout,
  ``pg_terminate_backend``, a restart). A dead idle connection is noticed
  before use (:mod:`.pg_pool`); a call whose connection breaks under it is
  tried again on a fresh one when that is safe: a read, a lease (taking it
  again is the same), and a write whose outcome is first *settled* by reading
  what landed (an append that names ``expected_seq`` is found in the log by
  its records, a document by its value), so no write is made twice. An append
  that names no ``expected_seq`` cannot be settled: it fails, saying it may
  have been written. While the server is away a call tries to connect again
  every :data:`.pg_pool.RETRY_EVERY` seconds, for up to ``connect_timeout``.

The pool opens lazily on first use, so the constructor needs no running loop.
The schema lives in the first schema of the connection's ``search_path``
(``public`` unless the DSN says ``options=-csearch_path=...``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from datetime import UTC, datetime
from typing import Any, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict

from ..core.clock import SYSTEM_CLOCK, Clock, SystemClock
from ..core.errors import InvalidInputError, UnavailableError
from .base import Doc, Lease, LogConflictError, LogRecord, VersionConflictError, check_name
from .migrations import (
    POSTGRES_MIGRATIONS,
    SchemaStatus,
    apply_postgres_migrations,
    postgres_schema_version,
)
from .pg_notify import NotifyListener, channel_for
from .pg_pool import Pool, PoolClosedError, PoolTimeoutError
from .wakeups import Wakeups

__all__ = [
    "PostgresPersistence",
    "check_dsn",
    "postgres_persistence",
    "postgres_schema_status",
    "upgrade_postgres_schema",
]

# A watch re-reads this often (by default) even when no notification came: it
# bounds how late a record can be seen if a notification is lost with its
# connection ...
_log = logging.getLogger(__name__)
T = TypeVar("T")
Conn = psycopg.AsyncConnection[Any]
_ATTEMPTS = 4
"""Times one call runs its statement at most, each on a fresh connection after the last
one broke under it (connections killed every half second still let calls through)."""
_KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}
"""TCP keepalives unless the DSN sets them: a server that vanished without a word (a
dropped route) is found out in about a minute instead of the system's two hours."""
_SAFETY_POLL_SECONDS = 5.0
# ... and this often while the listening connection is down.
_FALLBACK_POLL_SECONDS = 0.25
_WATCH_BATCH = 500

# The time a statement uses: the caller's clock if it injected one, else the
# database's.
_NOW = "COALESCE(%(now)s::timestamptz, now())"

# An append is one statement: bump the stream's counter (row-locking it until
# commit), insert the records numbered from the old counter. When the
# expected sequence does not match, the counter statement returns no row and
# nothing else happens. Two shapes, because an absent stream may only be
# created when nothing (or 0) was expected.
_APPEND = """
WITH alloc AS ({alloc}), ins AS (
    INSERT INTO logs (stream, seq, type, data, at)
    SELECT %(stream)s, alloc.last_seq - %(n)s + r.ord, r.type, r.data::json, {at}
    FROM alloc, unnest(%(types)s::text[], %(datas)s::text[]) WITH ORDINALITY AS r(type, data, ord)
)
SELECT last_seq, {at} FROM alloc
"""
_NOTIFY = b"SELECT pg_notify(%s, %s)"
_APPEND_UPSERT = _APPEND.format(
    at=_NOW,
    alloc="""
    INSERT INTO streams AS s (stream, last_seq) VALUES (%(stream)s, %(n)s)
    ON CONFLICT (stream) DO UPDATE SET last_seq = s.last_seq + EXCLUDED.last_seq
    WHERE %(expected)s::bigint IS NULL OR s.last_seq = %(expected)s::bigint
    RETURNING last_seq""",
)
_APPEND_EXPECTING = _APPEND.format(
    at=_NOW,
    alloc="""
    UPDATE streams SET last_seq = last_seq + %(n)s
    WHERE stream = %(stream)s AND last_seq = %(expected)s::bigint
    RETURNING last_seq""",
)

# Always updates (so it always returns the row as it stands after the row
# lock), but changes nothing while somebody else holds an unexpired lease.
_ACQUIRE = f"""
INSERT INTO leases AS l (name, owner, expires_at, token)
VALUES (%(name)s, %(owner)s, {_NOW} + make_interval(secs => %(ttl)s), 1)
ON CONFLICT (name) DO UPDATE SET
    owner = CASE WHEN l.owner IN ('', EXCLUDED.owner) OR l.expires_at <= {_NOW}
                 THEN EXCLUDED.owner ELSE l.owner END,
    expires_at = CASE WHEN l.owner IN ('', EXCLUDED.owner) OR l.expires_at <= {_NOW}
                      THEN EXCLUDED.expires_at ELSE l.expires_at END,
    token = CASE WHEN l.owner = EXCLUDED.owner THEN l.token
                 WHEN l.owner = '' OR l.expires_at <= {_NOW} THEN l.token + 1
                 ELSE l.token END
RETURNING owner, expires_at, token
"""


# allow_nan=False: NaN and Infinity are not JSON, and the json column would
# refuse them after the fact. One encoder for every write: ``json.dumps`` with
# options builds a new one per call, a third of its cost.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _dump(value: Mapping[str, Any]) -> str:
    return _ENCODER.encode(value)


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


def _prefix_end(prefix: str) -> str | None:
    """The smallest string greater than every string starting with ``prefix``.

    Keys use the "C" collation (code point order, as Python sorts), so this
    turns a prefix into an index range.
    """
    while prefix:
        following = ord(prefix[-1]) + 1
        if following == 0xD800:  # surrogates cannot be stored; skip past them
            following = 0xE000
        if following <= 0x10FFFF:
            return prefix[:-1] + chr(following)
        prefix = prefix[:-1]
    return None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def check_dsn(dsn: str) -> str:
    """``dsn`` if libpq can read it; else ``invalid_dsn``, before any connection is tried.

    The message never quotes the DSN nor libpq's reason, which quotes it: a
    DSN may hold a password, and an error may end up in a log or a terminal
    recording.
    """
    try:
        conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        raise InvalidInputError(
            "the DSN is not a PostgreSQL connection string; write it as "
            "postgresql://USER@HOST:5432/DBNAME (a password after USER:, percent-encoded) "
            "or as 'host=HOST dbname=DBNAME user=USER'",
            code="invalid_dsn",
            field="dsn",
        ) from None
    return dsn


def describe_dsn(dsn: str) -> str:
    """The DSN for messages, without its password."""
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<unparsable DSN>"
    host = parts.get("host") or "localhost"
    return (
        f"{parts.get('user') or ''}@{host}:{parts.get('port') or 5432}/{parts.get('dbname') or ''}"
    )


class PostgresPersistence:
    """The :class:`~.base.Persistence` contract on PostgreSQL (psycopg 3, async, pooled)."""

    def __init__(
        self,
        dsn: str,
        *,
        clock: Clock = SYSTEM_CLOCK,
        min_size: int = 1,
        max_size: int = 10,
        connect_timeout: float = 10.0,
        migrate: bool = True,
        safety_poll: float = _SAFETY_POLL_SECONDS,
    ) -> None:
        self.dsn = check_dsn(dsn)
        self._safety_poll = safety_poll
        self._clock = clock
        # The system clock means "real time", and real time is the database's.
        self._own_clock = not isinstance(clock, SystemClock)
        self._min_size = min_size
        self._max_size = max_size
        self._connect_timeout = connect_timeout
        self._migrate = migrate
        self._pool: Pool | None = None
        self._open_lock = asyncio.Lock()
        self._closed = False
        self._wakeups = Wakeups()
        self._listener = NotifyListener(dsn, self._wakeups, connect_timeout=connect_timeout)

    # -- connections --------------------------------------------------------
    async def _ready(self) -> Pool:
        if self._pool is not None:
            return self._pool
        async with self._open_lock:
            if self._closed:
                raise _closed_error()
            if self._pool is None:
                self._pool = await self._open_pool()
        return self._pool

    async def _open_pool(self) -> Pool:
        """The pool, the schema brought up to date (or checked), and ``min_size``
        connections open."""
        given = conninfo_to_dict(self.dsn)
        kwargs = {k: v for k, v in _KEEPALIVES.items() if k not in given}
        pool = Pool(self.dsn, max_size=self._max_size, kwargs=kwargs)

        async def prepare(conn: Conn) -> str:
            if self._migrate:
                await apply_postgres_migrations(conn, POSTGRES_MIGRATIONS)
            else:
                await postgres_schema_version(conn, POSTGRES_MIGRATIONS, strict=True)
            cur = await conn.execute("SELECT current_schema()")
            row = await cur.fetchone()
            return str(row[0]) if row else "public"

        try:
            schema = await self._run(prepare, pool=pool)
            deadline = time.monotonic() + self._connect_timeout
            held = [await self._get(pool, deadline) for _ in range(self._min_size - 1)]
            for conn in held:
                await pool.put(conn)
        except BaseException:
            await pool.close()
            raise
        self._listener.channel = channel_for(schema)
        return pool

    def _unavailable(self, exc: BaseException | None) -> UnavailableError:
        why = f" ({_one_line(exc)})" if exc is not None else ""
        return UnavailableError(
            f"PostgreSQL at {describe_dsn(self.dsn)} did not answer{why}; "
            "check that the server runs and the DSN is right, then retry",
            code="database_unavailable",
        )

    async def _get(self, pool: Pool, deadline: float) -> Conn:
        try:
            return await pool.get(deadline)
        except PoolClosedError:
            raise _closed_error() from None
        except PoolTimeoutError as exc:
            raise self._unavailable(
                exc.__cause__ or TimeoutError(f"no connection within {self._connect_timeout:g} s")
            ) from exc
        except psycopg.OperationalError as exc:
            raise self._unavailable(exc) from exc

    async def _run(
        self,
        work: Callable[[Conn], Awaitable[T]],
        *,
        settle: Callable[[Conn], Awaitable[T | _Again]] | None = None,
        retry: bool = True,
        pool: Pool | None = None,
    ) -> T:
        """``work`` on a pooled connection; if the connection breaks under it, again on a
        fresh one, up to ``_ATTEMPTS`` times within ``connect_timeout``.

        ``settle`` (a write that is not safe to repeat blindly) first reads what the
        broken attempt left: its answer is the call's, unless it is ``_AGAIN``
        (nothing landed: run ``work`` again). ``retry=False``: a broken connection
        fails the call, saying the write may have been made.
        """
        pool = pool or await self._ready()
        deadline = time.monotonic() + self._connect_timeout
        broke = 0
        while True:
            conn = await self._get(pool, deadline)
            try:
                result = await work(conn)
            except psycopg.Error as exc:
                lost = conn.broken or conn.closed
                await pool.put(conn)
                if not lost:
                    error = self._refused(exc)
                    if error is exc:
                        raise
                    raise error from exc
                if not retry:
                    raise self._maybe_written(exc) from exc
                broke += 1
                if broke >= _ATTEMPTS or time.monotonic() >= deadline:
                    raise self._unavailable(exc) from exc
                if settle is not None:
                    outcome = await self._run(settle, pool=pool)
                    if not isinstance(outcome, _Again):
                        return outcome
                continue
            except BaseException:
                await pool.put(conn)  # closed, if a statement was cut short
                raise
            await pool.put(conn)
            return result

    def _refused(self, exc: psycopg.Error) -> Exception:
        """What a statement's own error (the connection still sound) becomes."""
        if isinstance(exc, psycopg.DataError | psycopg.errors.ProgramLimitExceeded):
            # A value the server cannot hold (a name too long for an index,
            # a number out of range): the caller's to fix, and nothing was written.
            return InvalidInputError(
                f"PostgreSQL refused the value: {_one_line(exc)}; shorten or correct it"
            )
        if isinstance(exc, psycopg.errors.DiskFull):
            return UnavailableError(
                f"the disk of PostgreSQL at {describe_dsn(self.dsn)} is full ({_one_line(exc)}); "
                "nothing of this write was saved — free space on the database server, then retry",
                code="no_space",
            )
        if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
            if self._closed:
                return _closed_error()
            return self._unavailable(exc)
        return exc

    def _maybe_written(self, exc: psycopg.Error) -> UnavailableError:
        return UnavailableError(
            f"the connection to PostgreSQL at {describe_dsn(self.dsn)} broke during the write "
            f"({_one_line(exc)}), which may or may not have been made; read it back "
            "before writing it again",
            code="database_unavailable",
        )

    async def _fetch(
        self,
        query: str,
        params: Mapping[str, Any] | Sequence[Any],
        *,
        settle: Callable[[Conn], Awaitable[list[Any] | _Again]] | None = None,
    ) -> list[Any]:
        """The rows of one statement; a read, or a write settled by ``settle``."""

        async def work(conn: Conn) -> list[Any]:
            # Bytes: the queries are built from constants, not from input.
            cur = await conn.execute(query.encode(), params)
            return await cur.fetchall()

        return await self._run(work, settle=settle)

    def _now_param(self) -> datetime | None:
        return self._clock.now() if self._own_clock else None

    # -- logs ---------------------------------------------------------------
    async def append(
        self,
        stream: str,
        records: Sequence[tuple[str, Mapping[str, Any]]],
        *,
        expected_seq: int | None = None,
    ) -> list[LogRecord]:
        statement = _Append(stream, records, expected_seq, self._now_param())

        async def work(conn: Conn) -> list[Any]:
            cur = await conn.execute(statement.query, statement.params)
            rows = await cur.fetchall()
            if rows and statement.types:
                await self._announce(conn, stream)
            return rows

        settled = expected_seq is not None
        rows = await self._run(work, settle=statement.landed if settled else None, retry=settled)
        return await self._appended(statement, rows)

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
        check_name("lease", lease)
        check_name("owner", owner)
        now = self._now_param()
        statement = _Append(stream, records, expected_seq, now)

        async def work(conn: Conn) -> tuple[list[Any] | None, Lease]:
            """(the append's rows, the lease); rows None: the lease is somebody else's."""
            try:
                async with conn.transaction():
                    cur = await conn.execute(
                        _ACQUIRE.encode(),
                        {"name": lease, "owner": owner, "ttl": float(ttl), "now": now},
                    )
                    held_by, until, token = (await cur.fetchall())[0]
                    taken = Lease(lease, held_by, _utc(until), token)
                    if held_by != owner:
                        return None, taken  # somebody else's: the statement changed nothing
                    cur = await conn.execute(statement.query, statement.params)
                    rows = await cur.fetchall()
                    if not rows:
                        raise _AppendConflictError  # rolls the lease back with it
            except _AppendConflictError:
                rows = []
            if rows and statement.types:
                await self._announce(conn, stream)
            return rows, taken

        async def settle(conn: Conn) -> tuple[list[Any] | None, Lease] | _Again:
            rows = await statement.landed(conn)
            if isinstance(rows, _Again):
                return rows  # the transaction never committed: the lease too is as it was
            cur = await conn.execute(
                b"SELECT owner, expires_at, token FROM leases WHERE name = %s", (lease,)
            )
            held_by, until, token = (await cur.fetchall())[0]
            return rows, Lease(lease, held_by, _utc(until), token)

        rows, taken = await self._run(work, settle=settle)
        if rows is None:
            return [], taken
        return await self._appended(statement, rows), taken

    async def _appended(self, statement: _Append, rows: list[Any]) -> list[LogRecord]:
        """The records an append statement wrote, from the row it returned; none is a conflict."""
        stream = statement.stream
        if not rows:
            last = await self.last_seq(stream)
            raise LogConflictError.at(stream, expected_seq=statement.expected_seq, last_seq=last)
        last_seq, at = rows[0]
        base = last_seq - len(statement.types)
        self._wakeups.wake(stream)
        return [
            LogRecord(stream, base + i + 1, t, json.loads(text), _utc(at))
            for i, (t, text) in enumerate(zip(statement.types, statement.datas, strict=True))
        ]

    async def _announce(self, conn: psycopg.AsyncConnection[Any], stream: str) -> None:
        # The append has committed: a failed NOTIFY must not make it look
        # failed (a retry would write it twice). Watchers catch up by polling.
        try:
            await conn.execute(_NOTIFY, (self._listener.channel, stream))
        except psycopg.Error as exc:
            _log.warning("could not announce an append to %r: %s", stream, _one_line(exc))

    async def read(
        self, stream: str, *, after: int = 0, limit: int | None = None
    ) -> list[LogRecord]:
        rows = await self._fetch(
            "SELECT seq, type, data, at FROM logs WHERE stream = %s AND seq > %s "
            "ORDER BY seq LIMIT %s",
            (stream, after, limit),
        )
        return [LogRecord(stream, s, t, d, _utc(a)) for s, t, d, a in rows]

    async def last_seq(self, stream: str) -> int:
        # The logs, not the counter row: the counter may run ahead of what a
        # reader can see only inside an uncommitted append.
        rows = await self._fetch(
            "SELECT COALESCE(MAX(seq), 0) FROM logs WHERE stream = %s", (stream,)
        )
        return int(rows[0][0])

    async def watch(self, stream: str, *, after: int = 0) -> AsyncIterator[LogRecord]:
        check_name("stream", stream)
        await self._ready()
        await self._listener.start()
        while True:
            # Register before the catch-up read: a notification that arrives
            # while we read still wakes the next round, so nothing is missed;
            # reading past ``after`` means nothing is yielded twice.
            fut = self._wakeups.register(stream)
            try:
                fresh = await self.read(stream, after=after, limit=_WATCH_BATCH)
                for record in fresh:
                    after = record.seq
                    yield record
                if not fresh:
                    timeout = (
                        self._safety_poll if self._listener.listening else _FALLBACK_POLL_SECONDS
                    )
                    with suppress(TimeoutError):
                        await asyncio.wait_for(fut, timeout)
            finally:
                self._wakeups.discard(stream, fut)

    # -- documents ----------------------------------------------------------
    async def get(self, collection: str, key: str) -> Doc | None:
        rows = await self._fetch(
            "SELECT value, version FROM docs WHERE collection = %s AND key = %s",
            (collection, key),
        )
        if not rows:
            return None
        value, version = rows[0]
        return Doc(collection, key, value, version)

    async def insert(self, collection: str, key: str, value: Mapping[str, Any]) -> tuple[Doc, bool]:
        check_name("collection", collection)
        check_name("key", key)
        text = _dump(value)

        async def settle(conn: Conn) -> list[Any] | _Again:
            # What is there now, and whether it is ours: every insert whose outcome
            # matters ("at most once") stores values that say who wrote them.
            stored = await _stored(conn, collection, key)
            if stored is None:
                return _AGAIN
            found, version, raw = stored
            return [(found, version, raw == text)]

        while True:
            # One statement: the insert, or else what is there. When a rival's
            # insert commits while ours waits on it, the second half's snapshot
            # (taken before) cannot see that row, and nothing returns: go again.
            rows = await self._fetch(
                "WITH ins AS (INSERT INTO docs (collection, key, value, version) "
                "VALUES (%(c)s, %(k)s, %(v)s::json, 1) ON CONFLICT DO NOTHING "
                "RETURNING value, version) "
                "SELECT value, version, true FROM ins "
                "UNION ALL SELECT value, version, false FROM docs "
                "WHERE collection = %(c)s AND key = %(k)s AND NOT EXISTS (SELECT FROM ins)",
                {"c": collection, "k": key, "v": text},
                settle=settle,
            )
            if rows:
                stored, version, created = rows[0]
                return Doc(collection, key, stored, version), bool(created)

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
        args = {"c": collection, "k": key, "v": text, "e": expected_version}
        if expected_version is None:
            query = (
                "INSERT INTO docs AS d (collection, key, value, version) "
                "VALUES (%(c)s, %(k)s, %(v)s::json, 1) ON CONFLICT (collection, key) "
                "DO UPDATE SET value = EXCLUDED.value, version = d.version + 1 RETURNING version"
            )
        elif expected_version == 0:
            query = (
                "INSERT INTO docs (collection, key, value, version) "
                "VALUES (%(c)s, %(k)s, %(v)s::json, 1) ON CONFLICT DO NOTHING RETURNING version"
            )
        else:
            query = (
                "UPDATE docs SET value = %(v)s::json, version = version + 1 "
                "WHERE collection = %(c)s AND key = %(k)s AND version = %(e)s RETURNING version"
            )

        async def settle(conn: Conn) -> list[Any] | _Again:
            stored = await _stored(conn, collection, key)
            version = stored[1] if stored is not None else 0
            landed = expected_version is None or version == expected_version + 1
            if stored is not None and stored[2] == text and landed:
                return [(version,)]  # it landed
            if expected_version is None or version == expected_version:
                return _AGAIN
            return []  # somebody else's write: a conflict

        rows = await self._fetch(query, args, settle=settle)
        if not rows:
            raise await self._version_conflict(collection, key, expected_version)
        return Doc(collection, key, json.loads(text), rows[0][0])

    async def delete(
        self, collection: str, key: str, *, expected_version: int | None = None
    ) -> bool:
        if expected_version == 0:
            # "Must not exist": deleting nothing succeeds, finding one conflicts.
            if await self.get(collection, key) is not None:
                raise await self._version_conflict(collection, key, expected_version)
            return False

        async def settle(conn: Conn) -> list[Any] | _Again:
            stored = await _stored(conn, collection, key)
            if stored is None:
                return [(expected_version or 0,)]  # gone: the delete landed
            if expected_version is None or stored[1] == expected_version:
                return _AGAIN
            return []

        rows = await self._fetch(
            "DELETE FROM docs WHERE collection = %(c)s AND key = %(k)s "
            "AND (%(e)s::bigint IS NULL OR version = %(e)s::bigint) RETURNING version",
            {"c": collection, "k": key, "e": expected_version},
            settle=settle,
        )
        if not rows and expected_version is not None:
            raise await self._version_conflict(collection, key, expected_version)
        return bool(rows)

    async def _version_conflict(
        self, collection: str, key: str, expected: int | None
    ) -> VersionConflictError:
        current = await self.get(collection, key)
        version = current.version if current else 0
        return VersionConflictError.at(collection, key, expected=expected, current=version)

    async def scan(
        self, collection: str, *, prefix: str = "", after: str | None = None, limit: int = 1000
    ) -> list[Doc]:
        lower = max(prefix, after) if after is not None else prefix
        op = ">" if after is not None and after >= prefix else ">="
        upper = _prefix_end(prefix)
        rows = await self._fetch(
            f"SELECT key, value, version FROM docs WHERE collection = %s AND key {op} %s "
            "AND (%s::text IS NULL OR key < %s::text) ORDER BY key LIMIT %s",
            (collection, lower, upper, upper, limit),
        )
        return [Doc(collection, k, v, ver) for k, v, ver in rows]

    # -- leases -------------------------------------------------------------
    async def acquire_lease(self, name: str, owner: str, ttl: float) -> Lease:
        check_name("lease", name)
        check_name("owner", owner)
        rows = await self._fetch(
            _ACQUIRE, {"name": name, "owner": owner, "ttl": float(ttl), "now": self._now_param()}
        )
        held_by, until, token = rows[0]
        return Lease(name, held_by, _utc(until), token)

    async def release_lease(self, name: str, owner: str) -> bool:
        check_name("owner", owner)

        async def settle(conn: Conn) -> list[Any] | _Again:
            cur = await conn.execute(b"SELECT owner, token FROM leases WHERE name = %s", (name,))
            row = await cur.fetchone()
            if row is not None and row[0] == owner:
                return _AGAIN  # still ours: the release did not land
            return [(row[1] if row else 0,)]

        # Expire rather than forget, so the fencing token keeps growing.
        rows = await self._fetch(
            f"UPDATE leases SET owner = '', expires_at = {_NOW} "
            "WHERE name = %(name)s AND owner = %(owner)s AND owner <> '' RETURNING token",
            {"name": name, "owner": owner, "now": self._now_param()},
            settle=settle,
        )
        return bool(rows)

    async def get_lease(self, name: str) -> Lease | None:
        rows = await self._fetch(
            "SELECT owner, expires_at, token FROM leases "
            f"WHERE name = %(name)s AND owner <> '' AND expires_at > {_NOW}",
            {"name": name, "now": self._now_param()},
        )
        if not rows:
            return None
        owner, until, token = rows[0]
        return Lease(name, owner, _utc(until), token)

    # -- life cycle ---------------------------------------------------------
    async def close(self) -> None:
        """Stop the listener, close the connections; watches on this handle then fail."""
        async with self._open_lock:
            self._closed = True
            pool, self._pool = self._pool, None
        await self._listener.stop()
        if pool is not None:
            await pool.close()


class _Append:
    """One append statement, checked and encoded: the upsert that may create the
    stream ("nothing expected" and "expected empty" only), else the one that
    expects ``expected_seq``."""

    def __init__(
        self,
        stream: str,
        records: Sequence[tuple[str, Mapping[str, Any]]],
        expected_seq: int | None,
        now: Any,
    ) -> None:
        self.stream = check_name("stream", stream)
        self.expected_seq = expected_seq
        self.types = [check_name("record type", t) for t, _ in records]
        self.datas = [_dump(d) for _, d in records]
        self.query = (_APPEND_UPSERT if expected_seq in (None, 0) else _APPEND_EXPECTING).encode()
        self.params = {
            "stream": stream,
            "n": len(self.types),
            "expected": expected_seq,
            "types": self.types,
            "datas": self.datas,
            "now": now,
        }

    async def landed(self, conn: Conn) -> list[Any] | _Again:
        """After a connection broke under this append: the row the statement returns
        (``[(last_seq, at)]``) if its records are in the log after ``expected_seq``,
        ``[]`` if another writer's are (a conflict), ``_AGAIN`` if none are (it did
        not land: write it again). The records' JSON is stored as sent, and carries
        ids, so the comparison is exact."""
        cur = await conn.execute(
            b"SELECT seq, type, data::text, at FROM logs WHERE stream = %s AND seq > %s "
            b"ORDER BY seq LIMIT %s",
            (self.stream, self.expected_seq or 0, len(self.types)),
        )
        rows = await cur.fetchall()
        if not rows:
            return _AGAIN
        if [(t, d) for _seq, t, d, _at in rows] != list(zip(self.types, self.datas, strict=True)):
            return []
        return [((self.expected_seq or 0) + len(self.types), rows[0][3])]


class _Again:
    """The write did not land: run it again (what a ``settle`` answers)."""


_AGAIN = _Again()


async def _stored(conn: Conn, collection: str, key: str) -> tuple[Any, int, str] | None:
    """A document as stored: (its value, its version, its JSON text exactly as written)."""
    cur = await conn.execute(
        b"SELECT value, version, value::text FROM docs WHERE collection = %s AND key = %s",
        (collection, key),
    )
    row = await cur.fetchone()
    return None if row is None else (row[0], int(row[1]), str(row[2]))


def _closed_error() -> UnavailableError:
    return UnavailableError(
        "this PostgreSQL persistence was closed; open a new one", code="store_closed"
    )


class _AppendConflictError(Exception):
    """The append of ``append_owned`` found another writer first: its transaction rolls back."""


def postgres_persistence(
    dsn: str,
    *,
    clock: Clock = SYSTEM_CLOCK,
    min_size: int = 1,
    max_size: int = 10,
    connect_timeout: float = 10.0,
    safety_poll: float = _SAFETY_POLL_SECONDS,
) -> PostgresPersistence:
    """A persistence in a PostgreSQL database, shared by many hosts.

    Nothing connects until the first call; the schema is brought up to date
    then (under an advisory lock, so hosts starting together do not race).
    ``clock``: leave it alone in production (lease and record times then come
    from the database, which all hosts share); inject one only in tests.
    ``safety_poll``: seconds a watch waits for a notification before it
    re-reads anyway.

    >>> store = postgres_persistence("postgresql://app@db.internal/agents")  # doctest: +SKIP
    >>> await store.append("thread:1", [("message", {"text": "hi"})])  # doctest: +SKIP
    """
    return PostgresPersistence(
        dsn,
        clock=clock,
        min_size=min_size,
        max_size=max_size,
        connect_timeout=connect_timeout,
        safety_poll=safety_poll,
    )


@asynccontextmanager
async def _one_connection(dsn: str) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    check_dsn(dsn)
    try:
        conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as exc:
        raise UnavailableError(
            f"could not connect to PostgreSQL at {describe_dsn(dsn)} ({_one_line(exc)}); "
            "check that the server runs and the DSN is right",
            code="database_unavailable",
        ) from exc
    async with conn:
        yield conn


async def upgrade_postgres_schema(dsn: str) -> SchemaStatus:
    """Apply every pending migration; returns where the schema stands afterwards.

    >>> asyncio.run(upgrade_postgres_schema("postgresql:///agents")).current  # doctest: +SKIP
    1
    """
    async with _one_connection(dsn) as conn:
        return await apply_postgres_migrations(conn, POSTGRES_MIGRATIONS)


async def postgres_schema_status(dsn: str) -> SchemaStatus:
    """Where the schema stands, without changing it."""
    async with _one_connection(dsn) as conn:
        return await postgres_schema_version(conn, POSTGRES_MIGRATIONS, strict=False)
