"""SQLite's errors in the error tree: a full disk is no_space, damage is told apart."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from agent_mem_vault.core.disk import disk_full, is_damage, sqlite_failure


def _error(run: object) -> sqlite3.Error:
    with pytest.raises(sqlite3.Error) as info:
        run()  # type: ignore[operator]
    return info.value


def test_a_database_that_cannot_grow_is_no_space_and_not_damage(tmp_path: Path) -> None:
    with closing(sqlite3.connect(tmp_path / "db")) as conn:
        conn.execute("CREATE TABLE t(x)")
        conn.execute("PRAGMA max_page_count=2")  # SQLITE_FULL, as a full disk gives
        error = _error(lambda: conn.execute("INSERT INTO t VALUES (zeroblob(100000))"))
    assert not is_damage(error)
    failure = sqlite_failure(error, tmp_path / "db", what="nothing was changed")
    assert failure.code == "no_space" and failure.exit_status == 6
    assert str(tmp_path / "db") in failure.message and "full" in failure.message
    assert failure.message.endswith("; nothing was changed")


def test_a_file_that_is_not_a_database_is_damage(tmp_path: Path) -> None:
    path = tmp_path / "db"
    path.write_bytes(b"not a database at all" * 100)
    with closing(sqlite3.connect(path)) as conn:
        error = _error(lambda: conn.execute("SELECT * FROM sqlite_master"))
    assert is_damage(error)
    assert sqlite_failure(error, path).code == "file_damaged"


def test_a_write_to_a_database_opened_read_only_is_permission_denied(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE t(x)")
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        error = _error(lambda: conn.execute("INSERT INTO t VALUES (1)"))
    assert not is_damage(error)
    assert sqlite_failure(error, path).code == "permission_denied"


def test_a_database_another_connection_holds_is_lock_timeout(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with closing(sqlite3.connect(path, isolation_level=None)) as holder:
        holder.execute("CREATE TABLE t(x)")
        holder.execute("BEGIN EXCLUSIVE")
        with closing(sqlite3.connect(path, timeout=0)) as other:
            error = _error(lambda: other.execute("SELECT * FROM t"))
    assert not is_damage(error)
    assert sqlite_failure(error, path).code == "lock_timeout"


def test_a_filesystem_with_room_is_not_full(tmp_path: Path) -> None:
    assert not disk_full(tmp_path / "not" / "made" / "yet")
