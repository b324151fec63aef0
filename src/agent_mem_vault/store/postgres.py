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
  ``pg_terminate_backend``, a restart): :mod:`.pg_calls` tries a call again on
  a fresh connection when that is safe, and each write here says how to
  *settle* what a broken attempt left (its ``settle`` reads what landed), so
  no write is made twice.

The pool opens lazily on first use, so the constructor needs no running loop.
The schema lives in the first schema of the connection's ``search_path``
(``public`` unless the DSN says ``options=-csearch_path=...``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any

import psycopg

from ..core.clock import SYSTEM_CLOCK, Clock, SystemClock
from .backend import Backend, Claim, Encoded, written
from .base import Doc, Lease, LogConflictError, LogRecord, VersionConflictError, check_name
from .pg_calls import (
    AGAIN,
    Again,
    Conn,
    PgCalls,
    check_dsn,
    one_line,
    postgres_schema_status,
    upgrade_postgres_schema,
)
from .pg_notify import NotifyListener, channel_for
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


class PostgresPersistence(Backend):
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
        self._wakeups = Wakeups()
        self._listener = NotifyListener(dsn, self._wakeups, connect_timeout=connect_timeout)
        self._calls = PgCalls(
            dsn,
            min_size=min_size,
            max_size=max_size,
            connect_timeout=connect_timeout,
            migrate=migrate,
            on_open=self._listen_on,
        )
        self._run = self._calls.run
        self._fetch = self._calls.fetch

    def _listen_on(self, schema: str) -> None:
        self._listener.channel = channel_for(schema)

    # -- connections --------------------------------------------------------
    def _now_param(self) -> datetime | None:
        return self._clock.now() if self._own_clock else None

    # -- logs ---------------------------------------------------------------
    async def _append(
        self, stream: str, records: Encoded, expected_seq: int | None
    ) -> list[LogRecord]:
        statement = _Append(stream, records, expected_seq, self._now_param())

        async def work(conn: Conn) -> list[Any]:
            cur = await conn.execute(statement.query, statement.params)
            rows = await cur.fetchall()
            if rows and statement.records:
                await self._announce(conn, stream)
            return rows

        settled = expected_seq is not None
        rows = await self._run(work, settle=statement.landed if settled else None, retry=settled)
        return await self._appended(statement, rows)

    async def _append_owned(
        self, stream: str, records: Encoded, expected_seq: int | None, claim: Claim
    ) -> tuple[list[LogRecord], Lease]:
        lease, owner, ttl = claim.name, claim.owner, claim.ttl

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
            if rows and statement.records:
                await self._announce(conn, stream)
            return rows, taken

        async def settle(conn: Conn) -> tuple[list[Any] | None, Lease] | Again:
            rows = await statement.landed(conn)
            if isinstance(rows, Again):
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
        self._wakeups.wake(stream)
        return written(stream, last_seq - len(statement.records), statement.records, _utc(at))

    async def _announce(self, conn: psycopg.AsyncConnection[Any], stream: str) -> None:
        # The append has committed: a failed NOTIFY must not make it look
        # failed (a retry would write it twice). Watchers catch up by polling.
        try:
            await conn.execute(_NOTIFY, (self._listener.channel, stream))
        except psycopg.Error as exc:
            _log.warning("could not announce an append to %r: %s", stream, one_line(exc))

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
        await self._calls.ready()
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

    async def _insert(self, collection: str, key: str, text: str) -> tuple[Doc, bool]:
        async def settle(conn: Conn) -> list[Any] | Again:
            # What is there now, and whether it is ours: every insert whose outcome
            # matters ("at most once") stores values that say who wrote them.
            stored = await _stored(conn, collection, key)
            if stored is None:
                return AGAIN
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

    async def _put(self, collection: str, key: str, text: str, expected_version: int | None) -> Doc:
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

        async def settle(conn: Conn) -> list[Any] | Again:
            stored = await _stored(conn, collection, key)
            version = stored[1] if stored is not None else 0
            landed = expected_version is None or version == expected_version + 1
            if stored is not None and stored[2] == text and landed:
                return [(version,)]  # it landed
            if expected_version is None or version == expected_version:
                return AGAIN
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

        async def settle(conn: Conn) -> list[Any] | Again:
            stored = await _stored(conn, collection, key)
            if stored is None:
                return [(expected_version or 0,)]  # gone: the delete landed
            if expected_version is None or stored[1] == expected_version:
                return AGAIN
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
    async def _acquire_lease(self, name: str, owner: str, ttl: float) -> Lease:
        rows = await self._fetch(
            _ACQUIRE, {"name": name, "owner": owner, "ttl": float(ttl), "now": self._now_param()}
        )
        held_by, until, token = rows[0]
        return Lease(name, held_by, _utc(until), token)

    async def _release_lease(self, name: str, owner: str) -> bool:
        async def settle(conn: Conn) -> list[Any] | Again:
            cur = await conn.execute(b"SELECT owner, token FROM leases WHERE name = %s", (name,))
            row = await cur.fetchone()
            if row is not None and row[0] == owner:
                return AGAIN  # still ours: the release did not land
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
        pool = await self._calls.shut()
        await self._listener.stop()
        if pool is not None:
            await pool.close()


class _Append:
    """One append statement, checked and encoded: the upsert that may create the
    stream ("nothing expected" and "expected empty" only), else the one that
    expects ``expected_seq``."""

    def __init__(self, stream: str, records: Encoded, expected_seq: int | None, now: Any) -> None:
        self.stream = stream
        self.expected_seq = expected_seq
        self.records = records
        self.query = (_APPEND_UPSERT if expected_seq in (None, 0) else _APPEND_EXPECTING).encode()
        self.params = {
            "stream": stream,
            "n": len(records),
            "expected": expected_seq,
            "types": [t for t, _ in records],
            "datas": [text for _, text in records],
            "now": now,
        }

    async def landed(self, conn: Conn) -> list[Any] | Again:
        """After a connection broke under this append: the row the statement returns
        (``[(last_seq, at)]``) if its records are in the log after ``expected_seq``,
        ``[]`` if another writer's are (a conflict), ``AGAIN`` if none are (it did
        not land: write it again). The records' JSON is stored as sent, and carries
        ids, so the comparison is exact."""
        cur = await conn.execute(
            b"SELECT seq, type, data::text, at FROM logs WHERE stream = %s AND seq > %s "
            b"ORDER BY seq LIMIT %s",
            (self.stream, self.expected_seq or 0, len(self.records)),
        )
        rows = await cur.fetchall()
        if not rows:
            return AGAIN
        if [(t, d) for _seq, t, d, _at in rows] != self.records:
            return []
        return [((self.expected_seq or 0) + len(self.records), rows[0][3])]


async def _stored(conn: Conn, collection: str, key: str) -> tuple[Any, int, str] | None:
    """A document as stored: (its value, its version, its JSON text exactly as written)."""
    cur = await conn.execute(
        b"SELECT value, version, value::text FROM docs WHERE collection = %s AND key = %s",
        (collection, key),
    )
    row = await cur.fetchone()
    return None if row is None else (row[0], int(row[1]), str(row[2]))


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
