"""The migration runners take a migration's statements as SQL writes them.

A ``;`` inside a string literal or a trigger's body belongs to its statement;
a migration that fails leaves the schema as the one before it left it. Both
runners run on real databases: a SQLite file, and PostgreSQL when the test run
has one (``AMV_TEST_POSTGRES_DSN``).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from agent_mem_vault.store.migrations import (
    Migration,
    apply_postgres_migrations,
    apply_sqlite_migrations,
)
from agent_mem_vault.store.sqlite_writer import SqliteWriter
from tests.postgres_support import postgres_dsn, scoped_dsn

SQLITE_NOTES = Migration(
    1,
    "notes",
    """
    CREATE TABLE notes (body TEXT NOT NULL DEFAULT 'one; two');
    CREATE TABLE changes (what TEXT NOT NULL);
    -- every note added is written down; twice, to hold two statements
    CREATE TRIGGER noted AFTER INSERT ON notes BEGIN
        INSERT INTO changes VALUES ('added; ' || new.body);
        INSERT INTO changes VALUES ('done');
    END;
    INSERT INTO notes (body) VALUES ('a; b');
    """,
)
POSTGRES_NOTES = Migration(
    1,
    "notes",
    """
    CREATE TABLE notes (body TEXT NOT NULL DEFAULT 'one; two');
    CREATE TABLE changes (what TEXT NOT NULL);
    CREATE FUNCTION noted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO changes VALUES ('added; ' || NEW.body);
        INSERT INTO changes VALUES ('done');
        RETURN NEW;
    END;
    $$;
    CREATE TRIGGER noted AFTER INSERT ON notes FOR EACH ROW EXECUTE FUNCTION noted();
    INSERT INTO notes (body) VALUES ('a; b');
    """,
)
BROKEN = Migration(
    2,
    "broken",
    """
    CREATE TABLE later (x INTEGER);
    INSERT INTO notes (body) VALUES ('c; d');
    INSERT INTO nowhere VALUES (1);
    """,
)
AFTER_NOTES = {
    "notes": [("a; b",)],
    "changes": [("added; a; b",), ("done",)],
    "schema_migrations": [(1, "notes")],
}


def sqlite_rows(conn: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    tables = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {
        name: conn.execute(f"SELECT * FROM {name}").fetchall()
        if name != "schema_migrations"
        else conn.execute("SELECT version, name FROM schema_migrations").fetchall()
        for name in tables
    }


def migrate_sqlite(path: Path, migrations: tuple[Migration, ...]) -> int:
    """The runner as the store calls it: in the writer's transaction."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    with closing(conn), SqliteWriter(path, conn, 5.0).write() as writing:
        return apply_sqlite_migrations(writing, migrations)


def test_sqlite_keeps_a_semicolon_in_a_string_and_a_trigger_body_in_its_statement(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.db"
    assert migrate_sqlite(path, (SQLITE_NOTES,)) == 1
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        assert sqlite_rows(conn) == AFTER_NOTES
        conn.execute("INSERT INTO notes DEFAULT VALUES")
        assert conn.execute("SELECT what FROM changes").fetchall()[2:] == [
            ("added; one; two",),
            ("done",),
        ]


def test_a_failing_sqlite_migration_leaves_nothing_behind(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.db"
    with pytest.raises(sqlite3.OperationalError, match="nowhere"):
        migrate_sqlite(fresh, (SQLITE_NOTES, BROKEN))
    with closing(sqlite3.connect(fresh)) as conn:
        assert sqlite_rows(conn) == {}  # not even the table of applied migrations

    path = tmp_path / "m.db"
    migrate_sqlite(path, (SQLITE_NOTES,))
    with pytest.raises(sqlite3.OperationalError, match="nowhere"):
        migrate_sqlite(path, (SQLITE_NOTES, BROKEN))
    with closing(sqlite3.connect(path)) as conn:
        assert sqlite_rows(conn) == AFTER_NOTES


needs_postgres = pytest.mark.skipif(
    postgres_dsn() is None,
    reason="AMV_TEST_POSTGRES_DSN is not set: scripts/test-env.sh found no PostgreSQL "
    "on 127.0.0.1:5432 (start it, or export a DSN)",
)


async def postgres_rows(dsn: str) -> dict[str, list[tuple[Any, ...]]]:
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() ORDER BY table_name"
        )
        out: dict[str, list[tuple[Any, ...]]] = {}
        for (name,) in await cur.fetchall():
            columns = "version, name" if name == "schema_migrations" else "*"
            rows = await conn.execute(f"SELECT {columns} FROM {name}".encode())
            out[name] = await rows.fetchall()
        return out


async def migrate_postgres(dsn: str, migrations: tuple[Migration, ...]) -> int:
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        return (await apply_postgres_migrations(conn, migrations)).current


@pytest.mark.postgres
@needs_postgres
async def test_postgres_keeps_a_semicolon_in_a_string_and_a_function_body_in_its_statement() -> (
    None
):
    dsn = scoped_dsn()
    assert await migrate_postgres(dsn, (POSTGRES_NOTES,)) == 1
    assert await postgres_rows(dsn) == AFTER_NOTES


@pytest.mark.postgres
@needs_postgres
async def test_a_failing_postgres_migration_leaves_nothing_behind() -> None:
    import psycopg

    fresh = scoped_dsn()
    with pytest.raises(psycopg.errors.UndefinedTable, match="nowhere"):
        await migrate_postgres(fresh, (POSTGRES_NOTES, BROKEN))
    assert await postgres_rows(fresh) == {}

    dsn = scoped_dsn()
    await migrate_postgres(dsn, (POSTGRES_NOTES,))
    with pytest.raises(psycopg.errors.UndefinedTable, match="nowhere"):
        await migrate_postgres(dsn, (POSTGRES_NOTES, BROKEN))
    assert await postgres_rows(dsn) == AFTER_NOTES
