"""How one call of the PostgreSQL store reaches the database, and what it does when
the connection breaks under it.

Connections die (a failover, a proxy's idle timeout, ``pg_terminate_backend``,
a restart). A dead idle connection is noticed before use (:mod:`.pg_pool`); a
call whose connection breaks under it is tried again on a fresh one when that
is safe: a read, a lease (taking it again is the same), and a write whose
outcome is first *settled* by reading what landed (an append that names
``expected_seq`` is found in the log by its records, a document by its
value), so no write is made twice. An append that names no ``expected_seq``
cannot be settled: it fails, saying it may have been written. While the
server is away a call tries to connect again every
:data:`.pg_pool.RETRY_EVERY` seconds, for up to ``connect_timeout``.

The pool opens lazily on first use, so nothing here needs a running loop
until the first call; opening brings the schema up to date (or checks it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict

from ..core.errors import InvalidInputError, UnavailableError
from .migrations import (
    POSTGRES_MIGRATIONS,
    SchemaStatus,
    apply_postgres_migrations,
    postgres_schema_version,
)
from .pg_pool import Pool, PoolClosedError, PoolTimeoutError

__all__ = [
    "AGAIN",
    "Again",
    "Conn",
    "PgCalls",
    "check_dsn",
    "closed_error",
    "describe_dsn",
    "one_line",
    "postgres_schema_status",
    "upgrade_postgres_schema",
]

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


def one_line(exc: BaseException) -> str:
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


class Again:
    """The write did not land: run it again (what a ``settle`` answers)."""


AGAIN = Again()


def closed_error() -> UnavailableError:
    return UnavailableError(
        "this PostgreSQL persistence was closed; open a new one", code="store_closed"
    )


@dataclass(eq=False)
class PgCalls:
    """The pool of one store handle, and every call made through it."""

    dsn: str
    min_size: int
    max_size: int
    connect_timeout: float
    migrate: bool
    """Bring the schema up to date when the pool opens (else only check it)."""
    on_open: Callable[[str], None]
    """Told the schema that the connections use, once the pool is open."""
    _pool: Pool | None = field(default=None, init=False)
    _open_lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)
    _closed: bool = field(default=False, init=False)

    async def ready(self) -> Pool:
        if self._pool is not None:
            return self._pool
        async with self._open_lock:
            if self._closed:
                raise closed_error()
            if self._pool is None:
                self._pool = await self._open_pool()
        return self._pool

    async def _open_pool(self) -> Pool:
        """The pool, the schema brought up to date (or checked), and ``min_size``
        connections open."""
        given = conninfo_to_dict(self.dsn)
        kwargs = {k: v for k, v in _KEEPALIVES.items() if k not in given}
        pool = Pool(self.dsn, max_size=self.max_size, kwargs=kwargs)

        async def prepare(conn: Conn) -> str:
            if self.migrate:
                await apply_postgres_migrations(conn, POSTGRES_MIGRATIONS)
            else:
                await postgres_schema_version(conn, POSTGRES_MIGRATIONS, strict=True)
            cur = await conn.execute("SELECT current_schema()")
            row = await cur.fetchone()
            return str(row[0]) if row else "public"

        try:
            schema = await self.run(prepare, pool=pool)
            deadline = time.monotonic() + self.connect_timeout
            held = [await self._get(pool, deadline) for _ in range(self.min_size - 1)]
            for conn in held:
                await pool.put(conn)
        except BaseException:
            await pool.close()
            raise
        self.on_open(schema)
        return pool

    def _unavailable(self, exc: BaseException | None) -> UnavailableError:
        why = f" ({one_line(exc)})" if exc is not None else ""
        return UnavailableError(
            f"PostgreSQL at {describe_dsn(self.dsn)} did not answer{why}; "
            "check that the server runs and the DSN is right, then retry",
            code="database_unavailable",
        )

    async def _get(self, pool: Pool, deadline: float) -> Conn:
        try:
            return await pool.get(deadline)
        except PoolClosedError:
            raise closed_error() from None
        except PoolTimeoutError as exc:
            raise self._unavailable(
                exc.__cause__ or TimeoutError(f"no connection within {self.connect_timeout:g} s")
            ) from exc
        except psycopg.OperationalError as exc:
            raise self._unavailable(exc) from exc

    async def run(
        self,
        work: Callable[[Conn], Awaitable[T]],
        *,
        settle: Callable[[Conn], Awaitable[T | Again]] | None = None,
        retry: bool = True,
        pool: Pool | None = None,
    ) -> T:
        """``work`` on a pooled connection; if the connection breaks under it, again on a
        fresh one, up to ``_ATTEMPTS`` times within ``connect_timeout``.

        ``settle`` (a write that is not safe to repeat blindly) first reads what the
        broken attempt left: its answer is the call's, unless it is ``AGAIN``
        (nothing landed: run ``work`` again). ``retry=False``: a broken connection
        fails the call, saying the write may have been made.
        """
        pool = pool or await self.ready()
        deadline = time.monotonic() + self.connect_timeout
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
                    outcome = await self.run(settle, pool=pool)
                    if not isinstance(outcome, Again):
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
                f"PostgreSQL refused the value: {one_line(exc)}; shorten or correct it"
            )
        if isinstance(exc, psycopg.errors.DiskFull):
            return UnavailableError(
                f"the disk of PostgreSQL at {describe_dsn(self.dsn)} is full ({one_line(exc)}); "
                "nothing of this write was saved — free space on the database server, then retry",
                code="no_space",
            )
        if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
            if self._closed:
                return closed_error()
            return self._unavailable(exc)
        return exc

    def _maybe_written(self, exc: psycopg.Error) -> UnavailableError:
        return UnavailableError(
            f"the connection to PostgreSQL at {describe_dsn(self.dsn)} broke during the write "
            f"({one_line(exc)}), which may or may not have been made; read it back "
            "before writing it again",
            code="database_unavailable",
        )

    async def fetch(
        self,
        query: str,
        params: Mapping[str, Any] | Sequence[Any],
        *,
        settle: Callable[[Conn], Awaitable[list[Any] | Again]] | None = None,
    ) -> list[Any]:
        """The rows of one statement; a read, or a write settled by ``settle``."""

        async def work(conn: Conn) -> list[Any]:
            # Bytes: the queries are built from constants, not from input.
            cur = await conn.execute(query.encode(), params)
            return await cur.fetchall()

        return await self.run(work, settle=settle)

    async def shut(self) -> Pool | None:
        """Refuse calls from now on; returns the pool, for the caller to close once
        what still uses it has stopped."""
        async with self._open_lock:
            self._closed = True
            pool, self._pool = self._pool, None
        return pool


@asynccontextmanager
async def one_connection(dsn: str) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    check_dsn(dsn)
    try:
        conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as exc:
        raise UnavailableError(
            f"could not connect to PostgreSQL at {describe_dsn(dsn)} ({one_line(exc)}); "
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
    async with one_connection(dsn) as conn:
        return await apply_postgres_migrations(conn, POSTGRES_MIGRATIONS)


async def postgres_schema_status(dsn: str) -> SchemaStatus:
    """Where the schema stands, without changing it."""
    async with one_connection(dsn) as conn:
        return await postgres_schema_version(conn, POSTGRES_MIGRATIONS, strict=False)
