"""The persistence contract, run on every backend (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import pytest

from agent_mem_vault.core.errors import InvalidInputError
from agent_mem_vault.store import (
    LogConflictError,
    LogRecord,
    Persistence,
    VersionConflictError,
    scan_all,
)
from tests.store.watching import watch_until


async def test_append_assigns_gapless_sequence_numbers(persistence: Persistence) -> None:
    first = await persistence.append("t1", [("a", {"n": 1}), ("b", {"n": 2})])
    second = await persistence.append("t1", [("c", {"n": 3})])
    assert [r.seq for r in first + second] == [1, 2, 3]
    assert [r.type for r in await persistence.read("t1")] == ["a", "b", "c"]
    assert await persistence.last_seq("t1") == 3
    assert await persistence.last_seq("other") == 0


async def test_read_after_and_limit(persistence: Persistence) -> None:
    await persistence.append("s", [("x", {"i": i}) for i in range(5)])
    got = await persistence.read("s", after=2, limit=2)
    assert [r.data["i"] for r in got] == [2, 3]


async def test_append_with_stale_expected_seq_conflicts_and_writes_nothing(
    persistence: Persistence,
) -> None:
    await persistence.append("s", [("x", {})], expected_seq=0)
    with pytest.raises(LogConflictError) as info:
        await persistence.append("s", [("y", {}), ("z", {})], expected_seq=0)
    assert info.value.code == "log_conflict"
    assert [r.type for r in await persistence.read("s")] == ["x"]


async def test_streams_are_independent(persistence: Persistence) -> None:
    await persistence.append("a", [("x", {})])
    await persistence.append("b", [("y", {})], expected_seq=0)
    assert [r.type for r in await persistence.read("b")] == ["y"]


async def test_values_round_trip_as_json(persistence: Persistence) -> None:
    value = {"text": "héllo ✓", "nested": {"list": [1, 2.5, None, True]}}
    [record] = await persistence.append("s", [("t", value)])
    assert record.data == value
    assert (await persistence.read("s"))[0].data == value
    doc = await persistence.put("c", "k", value)
    assert doc.value == value
    fetched = await persistence.get("c", "k")
    assert fetched is not None and fetched.value == value


async def test_values_that_are_not_json_are_refused(persistence: Persistence) -> None:
    with pytest.raises(TypeError):
        await persistence.append("s", [("t", {"when": object()})])
    assert await persistence.last_seq("s") == 0


async def test_non_finite_numbers_are_refused_as_not_json(persistence: Persistence) -> None:
    with pytest.raises(ValueError):
        await persistence.append("s", [("t", {"x": float("nan")})])
    with pytest.raises(ValueError):
        await persistence.put("c", "k", {"x": float("inf")})
    assert await persistence.last_seq("s") == 0
    assert await persistence.get("c", "k") is None


async def test_read_with_negative_after_reads_from_the_start(persistence: Persistence) -> None:
    await persistence.append("s", [("a", {}), ("b", {}), ("c", {})])
    assert [r.seq for r in await persistence.read("s", after=-2)] == [1, 2, 3]


async def test_empty_names_are_refused(persistence: Persistence) -> None:
    with pytest.raises(InvalidInputError):
        await persistence.append("", [("t", {})])
    with pytest.raises(InvalidInputError):
        await persistence.put("c", "", {})


async def test_insert_is_put_if_absent(persistence: Persistence) -> None:
    doc, created = await persistence.insert("records", "k1", {"v": 1})
    assert created and doc.version == 1
    again, created_again = await persistence.insert("records", "k1", {"v": 2})
    assert not created_again
    assert again.value == {"v": 1}


async def test_put_compare_and_set(persistence: Persistence) -> None:
    d1 = await persistence.put("c", "k", {"v": 1}, expected_version=0)
    assert d1.version == 1
    with pytest.raises(VersionConflictError):
        await persistence.put("c", "k", {"v": 9}, expected_version=0)
    d2 = await persistence.put("c", "k", {"v": 2}, expected_version=1)
    assert d2.version == 2
    with pytest.raises(VersionConflictError):
        await persistence.put("c", "k", {"v": 3}, expected_version=1)
    got = await persistence.get("c", "k")
    assert got is not None and got.value == {"v": 2} and got.version == 2


async def test_delete(persistence: Persistence) -> None:
    await persistence.put("c", "k", {})
    assert await persistence.delete("c", "k")
    assert not await persistence.delete("c", "k")
    assert await persistence.get("c", "k") is None


async def test_scan_by_prefix_in_key_order(persistence: Persistence) -> None:
    for key in ["b/2", "a/1", "b/1", "b%", "c/1", "b/3"]:
        await persistence.put("c", key, {"k": key})
    got = await persistence.scan("c", prefix="b/")
    assert [d.key for d in got] == ["b/1", "b/2", "b/3"]
    page = await persistence.scan("c", prefix="b/", after="b/1", limit=1)
    assert [d.key for d in page] == ["b/2"]
    assert [d.key for d in await persistence.scan("other")] == []


async def test_scan_all_reads_every_page_under_a_prefix(persistence: Persistence) -> None:
    keys = [f"a/{i:02d}" for i in range(7)]
    for key in [*keys, "b/00"]:
        await persistence.put("c", key, {"k": key})
    # 7 documents in pages of 3 (a short last page) and of 7 (an exact one, then an empty one).
    for page in (3, 7):
        got = await scan_all(persistence, "c", prefix="a/", page=page)
        assert [d.key for d in got] == keys
        assert [d.value["k"] for d in got] == keys
    assert [d.key for d in await scan_all(persistence, "c", page=2)] == [*keys, "b/00"]


async def test_scan_orders_keys_by_code_point_on_every_backend(persistence: Persistence) -> None:
    # Not by a locale's collation: "B" < "a" < "z" < "ä" < "é" < "😀", as Python sorts.
    keys = ["é", "a", "😀", "B", "z", "ä", "a b", "a-b"]
    for key in keys:
        await persistence.put("c", key, {})
    assert [d.key for d in await persistence.scan("c")] == sorted(keys)
    assert [d.key for d in await persistence.scan("c", prefix="a")] == ["a", "a b", "a-b"]
    assert [d.key for d in await persistence.scan("c", after="z")] == ["ä", "é", "😀"]


async def test_lease_is_held_by_one_owner(persistence: Persistence) -> None:
    a = await persistence.acquire_lease("thread:1", "host-a", ttl=30)
    assert a.owner == "host-a"
    b = await persistence.acquire_lease("thread:1", "host-b", ttl=30)
    assert b.owner == "host-a"  # host-b did not get it
    renewed = await persistence.acquire_lease("thread:1", "host-a", ttl=30)
    assert renewed.owner == "host-a" and renewed.token == a.token
    assert await persistence.release_lease("thread:1", "host-a")
    assert await persistence.get_lease("thread:1") is None
    c = await persistence.acquire_lease("thread:1", "host-b", ttl=30)
    assert c.owner == "host-b" and c.token > a.token


async def test_append_owned_takes_the_lease_and_appends_in_one_write(
    persistence: Persistence,
) -> None:
    written, lease = await persistence.append_owned(
        "s", [("a", {"n": 1}), ("b", {})], expected_seq=0, lease="l", owner="host-a", ttl=30
    )
    assert [(r.seq, r.type, r.data) for r in written] == [(1, "a", {"n": 1}), (2, "b", {})]
    assert lease.owner == "host-a"
    assert await persistence.get_lease("l") == lease
    # Renewed by its owner: the same token, the next records.
    written, renewed = await persistence.append_owned(
        "s", [("c", {})], expected_seq=2, lease="l", owner="host-a", ttl=30
    )
    assert [r.seq for r in written] == [3] and renewed.token == lease.token
    assert renewed.expires_at >= lease.expires_at


async def test_append_owned_writes_nothing_while_another_owner_holds_the_lease(
    persistence: Persistence,
) -> None:
    held = await persistence.acquire_lease("l", "host-a", ttl=30)
    written, lease = await persistence.append_owned(
        "s", [("x", {})], expected_seq=0, lease="l", owner="host-b", ttl=30
    )
    assert written == [] and lease == held
    assert await persistence.read("s") == []
    assert await persistence.get_lease("l") == held
    # Released, it is the next owner's, with a new fencing token.
    await persistence.release_lease("l", "host-a")
    written, lease = await persistence.append_owned(
        "s", [("x", {})], expected_seq=0, lease="l", owner="host-b", ttl=30
    )
    assert [r.type for r in written] == ["x"]
    assert lease.owner == "host-b" and lease.token > held.token


async def test_append_owned_that_conflicts_takes_no_lease_and_writes_nothing(
    persistence: Persistence,
) -> None:
    await persistence.append("s", [("x", {})])
    with pytest.raises(LogConflictError):
        await persistence.append_owned(
            "s", [("y", {})], expected_seq=0, lease="l", owner="host-a", ttl=30
        )
    assert [r.type for r in await persistence.read("s")] == ["x"]
    assert await persistence.get_lease("l") is None


async def test_releasing_with_an_empty_owner_is_refused(persistence: Persistence) -> None:
    await persistence.acquire_lease("l", "host-a", ttl=30)
    await persistence.release_lease("l", "host-a")
    with pytest.raises(InvalidInputError):
        await persistence.release_lease("l", "")


async def test_expired_lease_can_be_taken_over(persistence: Persistence) -> None:
    await persistence.acquire_lease("l", "host-a", ttl=0.05)
    await asyncio.sleep(0.1)
    assert await persistence.get_lease("l") is None
    taken = await persistence.acquire_lease("l", "host-b", ttl=30)
    assert taken.owner == "host-b"


async def test_watch_yields_existing_then_new_records(persistence: Persistence) -> None:
    await persistence.append("w", [("a", {})])
    watching = watch_until(persistence, "w", 3)
    await asyncio.wait_for(watching.first.wait(), 5)  # the watch runs: it gave what was there
    await persistence.append("w", [("b", {})])
    await persistence.append("w", [("c", {})])
    await watching.done(5)
    assert [r.type for r in watching.records] == ["a", "b", "c"]


async def test_watch_sees_appends_from_another_handle(
    persistence_factory: Callable[[], Persistence],
) -> None:
    reader, writer = persistence_factory(), persistence_factory()
    watching = watch_until(reader, "x", 2)
    await writer.append("x", [("a", {}), ("b", {})])
    await watching.done(5)
    assert watching.seqs == [1, 2]
    await reader.close()
    if writer is not reader:
        await writer.close()


async def test_concurrent_appends_with_expected_seq_let_exactly_one_win(
    persistence_factory: Callable[[], Persistence],
) -> None:
    handles = [persistence_factory() for _ in range(4)]
    results = await asyncio.gather(
        *(h.append("race", [("x", {"by": i})], expected_seq=0) for i, h in enumerate(handles)),
        return_exceptions=True,
    )
    assert sum(1 for r in results if isinstance(r, list)) == 1
    assert all(isinstance(r, list | LogConflictError) for r in results)
    assert await handles[0].last_seq("race") == 1
    for h in {id(h): h for h in handles}.values():
        await h.close()


async def test_names_are_limited_in_utf8_bytes_on_every_backend(persistence: Persistence) -> None:
    wide = "é" * 600  # 600 characters, 1200 UTF-8 bytes
    with pytest.raises(InvalidInputError, match="UTF-8 bytes"):
        await persistence.put("c", wide, {})
    assert await persistence.get("c", wide) is None
    doc = await persistence.put("c", "é" * 512, {})
    assert doc.version == 1


async def _abandon_a_watch(persistence: Persistence, stream: str) -> None:
    """Wait on an idle stream, then give up (as a client that disconnects does)."""
    watch = persistence.watch(stream)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(anext(watch), 0.1)
    await watch.aclose()  # type: ignore[attr-defined]


async def test_an_append_still_succeeds_after_a_watch_was_cancelled(
    persistence: Persistence,
) -> None:
    await _abandon_a_watch(persistence, "s")
    [record] = await persistence.append("s", [("a", {})])
    assert record.seq == 1
    assert [r.seq async for r in _take(persistence.watch("s"), 1)] == [1]


async def test_a_watch_that_ended_with_its_event_loop_never_fails_a_later_append(
    backend: str, persistence: Persistence
) -> None:
    # The append commits before it wakes the watches; a watch whose loop has
    # closed (a finished asyncio.run, a stopped server thread) must not turn
    # that committed append into an error the caller would retry.
    if backend == "postgres":
        pytest.skip("a PostgreSQL handle belongs to the event loop that opened its pool")
    await asyncio.to_thread(asyncio.run, _abandon_a_watch(persistence, "s"))
    [record] = await persistence.append("s", [("a", {})])
    assert record.seq == 1
    assert await persistence.last_seq("s") == 1


async def _take(watch: AsyncIterator[LogRecord], n: int) -> AsyncIterator[LogRecord]:
    async for record in watch:
        yield record
        n -= 1
        if n == 0:
            return
