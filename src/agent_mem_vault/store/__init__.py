"""Storage: the one persistence layer that the harness and the run registry share.

>>> from agent_mem_vault.store import memory_persistence, sqlite_persistence
>>> store = memory_persistence()

Backends: ``memory_persistence()`` (this process only), ``sqlite_persistence(path)``
(the embedded default, safe across processes) and ``postgres_persistence(dsn)``
(many hosts). All implement :class:`Persistence`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import (
    Doc,
    Lease,
    LogConflictError,
    LogRecord,
    Persistence,
    VersionConflictError,
    scan_all,
)
from .memory import MemoryPersistence, memory_persistence
from .sqlite import SqlitePersistence, sqlite_persistence

if TYPE_CHECKING:
    from .postgres import PostgresPersistence, postgres_persistence

__all__ = [
    "Doc",
    "Lease",
    "LogConflictError",
    "LogRecord",
    "MemoryPersistence",
    "Persistence",
    "PostgresPersistence",
    "SqlitePersistence",
    "VersionConflictError",
    "memory_persistence",
    "postgres_persistence",
    "require_postgres",
    "scan_all",
    "sqlite_persistence",
]


def require_postgres() -> None:
    """Say which extra to install when psycopg is missing, before anything imports it."""
    from ..core.errors import InvalidInputError
    from ..core.extras import has_extra, missing_extra

    if not has_extra("postgres"):
        raise InvalidInputError(
            missing_extra("PostgreSQL storage", "postgres"), code="missing_extra"
        )


def __getattr__(name: str) -> Any:
    # psycopg is imported only by those who ask for PostgreSQL.
    if name in ("PostgresPersistence", "postgres_persistence"):
        require_postgres()
        from . import postgres

        return getattr(postgres, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
