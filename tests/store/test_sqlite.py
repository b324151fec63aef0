"""What only the SQLite backend has: a file that may not be a database at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_mem_vault.core.errors import DataError
from agent_mem_vault.store import sqlite_persistence


def test_a_file_that_is_not_a_database_is_refused_with_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a database, a grocery list\n" * 100)
    with pytest.raises(DataError) as info:
        sqlite_persistence(path)
    assert info.value.code == "store_unreadable"
    assert str(path) in info.value.message and "another file" in info.value.message
    assert path.read_text() == "not a database, a grocery list\n" * 100  # left as it was


def test_a_folder_given_as_the_store_is_refused_with_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError):
        sqlite_persistence(tmp_path)


async def test_a_store_reopened_keeps_its_data(tmp_path: Path) -> None:
    first = sqlite_persistence(tmp_path / "s.db")
    await first.append("s", [("a", {"n": 1})])
    await first.close()
    again = sqlite_persistence(tmp_path / "s.db")
    assert [r.data for r in await again.read("s")] == [{"n": 1}]
    await again.close()
