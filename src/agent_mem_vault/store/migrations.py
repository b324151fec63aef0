"""Named, versioned schema migrations for the SQL backends.

A migration runs once, in order, inside the caller's transaction, and is
recorded in ``schema_migrations``; a database newer than this code is refused
rather than guessed at.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from ..core.errors import DataError

__all__ = ["SQLITE_MIGRATIONS", "Migration", "apply_sqlite_migrations"]


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


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
        for statement in migration.sql.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) "
            "VALUES (?, ?, datetime('now'))",
            (migration.version, migration.name),
        )
    return int(max(current, newest))
