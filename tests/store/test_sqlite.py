"""What only the SQLite backend has: a file that may not be a database, group commit, close."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import threading
from contextlib import closing
from pathlib import Path

import pytest

from agent_mem_vault.core.errors import DataError, UnavailableError
from agent_mem_vault.store import Doc, sqlite_persistence

ROOT = Path(__file__).resolve().parents[2]


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


def hold_write_lock(path: Path) -> sqlite3.Connection:
    """A second connection holding the file's write lock: writes queue up until it commits."""
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    return holder


async def test_a_write_whose_error_rolls_back_the_batch_fails_alone_and_the_others_commit(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    store = sqlite_persistence(path)
    # A trigger in the file that answers one key with ROLLBACK: SQLite ends the
    # whole transaction, the savepoints of every other write of the batch with it.
    holder = hold_write_lock(path)
    holder.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON docs WHEN NEW.key = 'poison' "
        "BEGIN SELECT RAISE(ROLLBACK, 'poison refused'); END"
    )
    keys = [f"k{i}" for i in range(10)]
    keys.insert(5, "poison")

    async def release() -> None:
        holder.execute("COMMIT")  # runs after every put above has queued: one batch waits

    results = await asyncio.gather(
        *(store.put("c", k, {"k": k}) for k in keys), release(), return_exceptions=True
    )

    poisoned = results[5]
    assert isinstance(poisoned, DataError) and poisoned.code == "store_write_failed"
    assert "poison refused" in poisoned.message and str(path) in poisoned.message
    assert "rolled back" in poisoned.message and "savepoint" not in poisoned.message
    others = [r for k, r in zip(keys, results, strict=False) if k != "poison"]
    assert [(d.key, d.version) for d in others if isinstance(d, Doc)] == [
        (f"k{i}", 1) for i in range(10)
    ]
    # Alone, the same write fails the same way; the store goes on.
    with pytest.raises(DataError, match="poison refused"):
        await store.put("c", "poison", {})
    await store.put("c", "after", {})
    await store.close()
    holder.close()
    again = sqlite_persistence(path)
    assert sorted(d.key for d in await again.scan("c")) == sorted([*keys[:5], *keys[6:], "after"])
    await again.close()


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_a_disk_io_error_mid_batch_fails_only_the_write_that_meets_it(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    limit = 2_000_000
    done = subprocess.run(
        [sys.executable, "-m", "tests.store.small_disk_worker", str(path), str(limit)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    outcomes = {o["key"]: o for o in map(json.loads, done.stdout.splitlines())}

    for key in ("big", "big-alone"):
        assert outcomes[key]["code"] == "store_write_failed"
        assert "disk I/O error" in outcomes[key]["message"]
        assert str(path) in outcomes[key]["message"]
    assert {k for k, o in outcomes.items() if o["code"] == "ok"} == {
        "a0",
        "a1",
        "a2",
        "a3",
        "a4",
        "after",
    }
    with closing(sqlite3.connect(path)) as conn:  # what was acknowledged is what is on disk
        keys = {k for (k,) in conn.execute("SELECT key FROM docs WHERE collection = 'docs'")}
    assert keys == {"a0", "a1", "a2", "a3", "a4", "after"}


async def test_close_lets_queued_writes_commit_and_refuses_new_ones(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = sqlite_persistence(path)
    holder = hold_write_lock(path)  # the writes below queue behind it

    async def refused_then_release() -> UnavailableError:
        # Runs after close has begun: a new write is refused at once.
        with pytest.raises(UnavailableError) as info:
            await store.append("late", [("a", {})])
        holder.execute("COMMIT")
        return info.value

    *appended, closed, refused = await asyncio.gather(
        *(store.append(f"s{i}", [("a", {"i": i})]) for i in range(8)),
        store.close(),
        refused_then_release(),
    )

    assert [r.seq for recs in appended for r in recs] == [1] * 8
    assert closed is None
    assert refused.code == "store_closed" and str(path) in refused.message
    with pytest.raises(UnavailableError, match="closed"):
        await store.read("s0")
    holder.close()
    again = sqlite_persistence(path)
    assert [len(await again.read(f"s{i}")) for i in range(8)] == [1] * 8
    assert await again.read("late") == []
    await again.close()


def test_close_while_threads_write_leaves_no_write_waiting_or_acknowledged_unsaved(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    store = sqlite_persistence(path)
    writing = [threading.Event() for _ in range(4)]
    acknowledged: list[list[int]] = [[] for _ in writing]
    ended: list[BaseException | None] = [None for _ in writing]

    async def write(n: int) -> None:
        try:
            while True:  # until the store refuses: close is the only way out
                (record,) = await store.append(f"t{n}", [("a", {"n": n})])
                acknowledged[n].append(record.seq)
                writing[n].set()
        except BaseException as exc:
            ended[n] = exc
        finally:
            writing[n].set()

    threads = [
        threading.Thread(target=asyncio.run, args=(write(n),), daemon=True)
        for n in range(len(writing))
    ]
    for thread in threads:
        thread.start()
    for event in writing:
        event.wait()  # every thread has a write committed; all keep writing
    asyncio.run(store.close())
    for thread in threads:
        # A liveness bound, not a speed claim: a write left waiting forever
        # would otherwise hang the suite instead of failing this test.
        thread.join(timeout=120)
        assert not thread.is_alive()

    for exc in ended:
        assert isinstance(exc, UnavailableError) and exc.code == "store_closed", exc
    again = sqlite_persistence(path)
    for n, seqs in enumerate(acknowledged):
        assert seqs and [r.seq for r in asyncio.run(again.read(f"t{n}"))] == seqs
    asyncio.run(again.close())


def _writers(path: Path) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"sqlite-writer {path.name}"]


async def test_one_writer_thread_serves_every_write_ends_when_idle_and_on_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_mem_vault.store import sqlite_writer as sqlite_module

    path = tmp_path / "writer.db"
    store = sqlite_persistence(path)
    for i in range(5):  # one after another: the queue runs dry between writes
        await store.append("s", [("a", {"i": i})])
    (writer,) = _writers(path)
    await asyncio.gather(*(store.append(f"t{i}", [("a", {})]) for i in range(20)))
    assert _writers(path) == [writer]  # the same thread, not one per burst

    monkeypatch.setattr(sqlite_module, "_WRITER_IDLE_SECONDS", 0.01)
    await store.append("s", [("a", {"i": 5})])  # its wait now ends soon
    await asyncio.to_thread(writer.join)  # an idle writer ends
    (record,) = await store.append("s", [("a", {"i": 6})])  # and the next write starts one
    assert record.seq == 7
    (again,) = _writers(path)
    assert again is not writer
    await asyncio.to_thread(again.join)

    monkeypatch.setattr(sqlite_module, "_WRITER_IDLE_SECONDS", 3600.0)
    await store.append("s", [("a", {"i": 7})])
    (waiting,) = _writers(path)
    await store.close()
    await asyncio.to_thread(waiting.join)  # close ends a writer that waits for an hour
    reopened = sqlite_persistence(path)
    assert [r.data["i"] for r in await reopened.read("s")] == list(range(8))
    await reopened.close()
