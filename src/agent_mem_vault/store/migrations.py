"""Named, versioned schema migrations for the SQL backends.

A migration runs once, in order, inside the caller's transaction, and is
recorded in ``schema_migrations``; a database newer than this code is refused
rather than guessed at. A migration's SQL is a script of statements as SQL
writes them: a ``;`` inside a string literal or a trigger's body belongs to its
statement. SQLite runs one statement per ``execute``, so the script is cut where
:func:`sqlite3.complete_statement` says a statement ends (``executescript``
would commit the caller's transaction first); psycopg sends a script without
parameters to PostgreSQL whole, in one ``execute``.

On PostgreSQL the whole upgrade is one transaction that first takes an
advisory lock (keyed by the schema), so two hosts starting together apply
each migration once: the second waits, then finds nothing left to do. DDL is
transactional there, so a failed migration leaves the schema as it was.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import DataError

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = [
    "POSTGRES_MIGRATIONS",
    "SQLITE_MIGRATIONS",
    "Migration",
    "SchemaStatus",
    "apply_postgres_migrations",
    "apply_sqlite_migrations",
    "postgres_schema_version",
    "sqlite_statements",
]


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step; ``sql`` is a script of statements, each ended by ``;``."""

    version: int
    name: str
    sql: str


@dataclass(frozen=True, slots=True)
class SchemaStatus:
    """Where a database's schema stands relative to this code."""

    current: int
    """The newest migration applied to the database (0: none)."""
    newest: int
    """The newest migration this code knows."""
    applied: tuple[str, ...] = ()
    """Names of the migrations this call applied, oldest first."""
    pending: tuple[str, ...] = ()
    """Names of the migrations not applied yet."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form that ``agent-mem-vault db`` prints."""
        return {
            "current": self.current,
            "newest": self.newest,
            "applied": list(self.applied),
            "pending": list(self.pending),
        }


SQLITE_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "logs_docs_leases",
        """
        CREATE TABLE logs (
            stream TEXT NOT NULL,
            seq    INTEGER NOT NULL,
            type   TEXT NOT NULL,
            data   TEXT NOT NULL,
            at     INTEGER NOT NULL,
            PRIMARY KEY (stream, seq)
        ) WITHOUT ROWID;
        CREATE TABLE docs (
            collection TEXT NOT NULL,
            key        TEXT NOT NULL,
            value      TEXT NOT NULL,
            version    INTEGER NOT NULL,
            PRIMARY KEY (collection, key)
        ) WITHOUT ROWID;
        CREATE TABLE leases (
            name       TEXT PRIMARY KEY,
            owner      TEXT NOT NULL,
            expires_at INTEGER NOT NULL,
            token      INTEGER NOT NULL
        );
        """,
    ),
)


def apply_sqlite_migrations(conn: sqlite3.Connection, migrations: tuple[Migration, ...]) -> int:
    """Bring the schema up to date; returns the version it is at afterwards."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations "
        "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    (current,) = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
    newest = migrations[-1].version if migrations else 0
    if current > newest:
        raise DataError(
            f"the database schema is at version {current}, newer than this agent-mem-vault "
            f"knows ({newest}); upgrade agent-mem-vault"
        )
    for migration in migrations:
        if migration.version <= current:
            continue
        for statement in sqlite_statements(migration.sql):
            conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) "
            "VALUES (?, ?, datetime('now'))",
            (migration.version, migration.name),
        )
    return int(max(current, newest))


def sqlite_statements(script: str) -> list[str]:
    """The statements of ``script``, each whole, for one ``execute`` apiece.

    >>> sqlite_statements("INSERT INTO t VALUES ('a;b'); SELECT 1")
    ["INSERT INTO t VALUES ('a;b');", ' SELECT 1;']
    """
    statements: list[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip("; \t\r\n"):
                statements.append(pending)
            pending = ""
    if pending.strip("; \t\r\n"):
        # Not a whole statement (an unclosed string or trigger): SQLite says what is wrong.
        statements.append(pending)
    return statements


# Keys, collection names and stream names use the "C" collation: code point
# order, which is how Python sorts, so ``scan`` pages the same on every backend
# and a key prefix is an index range.
POSTGRES_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "logs_docs_leases",
        """
        CREATE TABLE streams (
            stream   TEXT COLLATE "C" PRIMARY KEY,
            last_seq BIGINT NOT NULL CHECK (last_seq >= 0)
        );
        CREATE TABLE logs (
            stream TEXT COLLATE "C" NOT NULL,
            seq    BIGINT NOT NULL CHECK (seq > 0),
            type   TEXT NOT NULL,
            data   JSON NOT NULL,
            at     TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (stream, seq)
        );
        CREATE TABLE docs (
            collection TEXT COLLATE "C" NOT NULL,
            key        TEXT COLLATE "C" NOT NULL,
            value      JSON NOT NULL,
            version    BIGINT NOT NULL CHECK (version > 0),
            PRIMARY KEY (collection, key)
        );
        CREATE TABLE leases (
            name       TEXT COLLATE "C" PRIMARY KEY,
            owner      TEXT NOT NULL,
            expires_at TIMESTAMPTZ NOT NULL,
            token      BIGINT NOT NULL
        )
        """,
    ),
)

# First key of the advisory lock that serializes upgrades; the second is a
# hash of the schema name, so upgrades of different schemas do not wait.
_PG_LOCK_CLASS = 0x616D76  # "amv"


async def _pg_current(conn: AsyncConnection[Any]) -> int:
    cur = await conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL")
    row = await cur.fetchone()
    if not row or not row[0]:
        return 0
    cur = await conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
    row = await cur.fetchone()
    return int(row[0]) if row else 0


def _refuse_newer(current: int, newest: int) -> None:
    if current > newest:
        raise DataError(
            f"the database schema is at version {current}, newer than this agent-mem-vault "
            f"knows ({newest}); upgrade agent-mem-vault",
            code="schema_too_new",
            current=current,
            newest=newest,
        )


async def postgres_schema_version(
    conn: AsyncConnection[Any], migrations: tuple[Migration, ...], *, strict: bool
) -> SchemaStatus:
    """Read where the schema stands; with ``strict``, refuse one that is newer."""
    newest = migrations[-1].version if migrations else 0
    current = await _pg_current(conn)
    if strict:
        _refuse_newer(current, newest)
    pending = tuple(m.name for m in migrations if m.version > current)
    return SchemaStatus(current, newest, (), pending)


async def apply_postgres_migrations(
    conn: AsyncConnection[Any], migrations: tuple[Migration, ...]
) -> SchemaStatus:
    """Bring the schema in the connection's ``search_path`` up to date, atomically."""
    newest = migrations[-1].version if migrations else 0
    async with conn.transaction():
        cur = await conn.execute("SELECT current_schema()")
        row = await cur.fetchone()
        if not row or row[0] is None:
            raise DataError(
                "the connection's search_path names no schema that exists; create the schema "
                "or fix the DSN's options=-csearch_path=...",
                code="no_schema",
            )
        await conn.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(current_schema()))", (_PG_LOCK_CLASS,)
        )
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
            "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        current = await _pg_current(conn)
        _refuse_newer(current, newest)
        applied: list[str] = []
        for migration in migrations:
            if migration.version <= current:
                continue
            # Bytes: the script is a constant of this module, not built from input.
            await conn.execute(migration.sql.encode())
            await conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
            applied.append(migration.name)
    return SchemaStatus(max(current, newest), newest, tuple(applied), ())
