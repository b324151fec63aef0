"""PostgreSQL for the tests: a fresh schema per test in the run's own database.

``scripts/test-env.sh`` creates a database for each test run and exports its
DSN as ``AMV_TEST_POSTGRES_DSN``. Each test then gets a schema of its own
(``CREATE SCHEMA`` is a few milliseconds, far cheaper than a database), and
every handle opened for that test points its ``search_path`` at it, so the
tests see each other's data no more than separate databases would.
"""

from __future__ import annotations

import os
import uuid
from contextlib import suppress
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from agent_mem_vault.store.postgres import PostgresPersistence, postgres_persistence

__all__ = ["PostgresFactory", "postgres_dsn", "postgres_factory", "scoped_dsn"]


def postgres_dsn() -> str | None:
    """The DSN of this test run's database, or None when PostgreSQL is not available."""
    return os.environ.get("AMV_TEST_POSTGRES_DSN") or None


def scoped_dsn() -> str:
    """Create an empty schema and return a DSN whose ``search_path`` is it."""
    dsn = postgres_dsn()
    if dsn is None:
        raise RuntimeError("AMV_TEST_POSTGRES_DSN is not set; source scripts/test-env.sh")
    schema = f"t_{uuid.uuid4().hex[:20]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    return make_conninfo(dsn, options=f"-csearch_path={schema}")


class PostgresFactory:
    """Each call opens a new handle (its own pool) on one schema, as a second host would."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.handles: list[PostgresPersistence] = []

    def __call__(self) -> PostgresPersistence:
        handle = postgres_persistence(self.dsn, min_size=1, max_size=4)
        self.handles.append(handle)
        return handle

    async def aclose(self) -> None:
        """Close every handle this factory opened (closing twice is harmless)."""
        for handle in self.handles:
            # A handle opened under another event loop (a sync test's
            # asyncio.run) cannot be closed from this one; its loop is gone
            # and its connections went with it.
            with suppress(RuntimeError):
                await handle.close()


def postgres_factory(tmp_path: Path) -> PostgresFactory:
    """The ``persistence_factory`` of ``tests/conftest.py`` for PostgreSQL: a fresh schema."""
    return PostgresFactory(scoped_dsn())
