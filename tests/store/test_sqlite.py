"""What only the SQLite backend has: a file that may not be a database at all."""

from __future__ import annotations

import asyncio
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


async def test_concurrent_writes_commit_together_and_a_conflict_fails_only_itself(
    tmp_path: Path,
) -> None:
    from agent_mem_vault.store import LogConflictError

    store = sqlite_persistence(tmp_path / "s.db")
    await store.append("busy", [("a", {"n": 0})])

    async def write(i: int) -> int:
        if i == 25:  # a writer that decided from a stale read
            await store.append("busy", [("stale", {})], expected_seq=0)
        await store.append(f"t{i % 5}", [("a", {"n": i})])
        (rec,) = await store.append("busy", [("a", {"n": i})])
        return rec.seq

    results = await asyncio.gather(*(write(i) for i in range(50)), return_exceptions=True)

    assert [type(r) for r in results].count(LogConflictError) == 1
    seqs = sorted(r for r in results if isinstance(r, int))
    assert seqs == list(range(2, 51))  # every other write committed, numbered without a gap
    busy = await store.read("busy")
    assert [r.type for r in busy].count("stale") == 0
    assert sum([len(await store.read(f"t{k}")) for k in range(5)]) == 49
    await store.close()
    again = sqlite_persistence(tmp_path / "s.db")  # and it is all on disk
    assert len(await again.read("busy")) == 50
    await again.close()
