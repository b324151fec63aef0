"""Failover: a host killed (SIGKILL) mid-turn; another host takes its threads over.

Two host processes on one PostgreSQL. The first owns some threads and is
killed while turns run on them; the second takes each thread over once its
lease lapses, closes the interrupted turn exactly as the log says, and goes
on. No turn runs twice, and every acknowledged input is in the log once.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator

import pytest

from agent_mem_vault.harness.log import stream_name
from agent_mem_vault.harness.takeover import UNKNOWN_TOOL_OUTCOME
from agent_mem_vault.store import LogRecord
from agent_mem_vault.store.postgres import PostgresPersistence, postgres_persistence

from .conftest import HostStarter, send_until_owned, wait_for_record

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
THREADS = ["t1", "t2", "t3"]


@pytest.fixture
async def store(dsn: str) -> AsyncIterator[PostgresPersistence]:
    handle = postgres_persistence(dsn, min_size=1, max_size=2)
    yield handle
    await handle.close()


def _started(input_id: str):  # type: ignore[no-untyped-def]
    return lambda r: r.type == "run.started" and r.data["inputId"] == input_id


def check_log(records: list[LogRecord]) -> dict[str, dict[str, object]]:
    """Every input once; every run started once and finished once, never overlapping."""
    inputs = Counter(r.data["inputId"] for r in records if r.type == "input")
    assert all(n == 1 for n in inputs.values()), inputs
    runs: dict[str, dict[str, object]] = {}
    running: str | None = None
    for record in records:
        if record.type == "run.started":
            assert running is None, f"run {record.data['runId']} started while {running} ran"
            assert record.data["runId"] not in runs, "a turn ran twice"
            running = record.data["runId"]
            runs[running] = {"input": record.data["inputId"]}
        elif record.type == "run.finished":
            assert running is not None and record.data["runId"] == running, (
                "a turn finished that was not running"
            )
            runs[running].update(record.data)
            running = None
    assert running is None, "a turn was left running"
    return {str(v["input"]): v for v in runs.values()}


async def test_a_host_killed_mid_turn_is_taken_over_and_every_acknowledged_input_is_logged_once(
    start_host: HostStarter, store: PostgresPersistence
) -> None:
    fast = [[["text", f"answer {t}"]] for t in THREADS]
    slow = [[["pause", 60], ["text", "never"]] for _ in THREADS]
    first = await start_host("host-a", {"main": fast + slow}, lease_ttl=1.0)
    second = await start_host("host-b", {"main": [[["text", "taken over"]] for _ in THREADS]})
    acknowledged = []
    for thread in THREADS:
        answer = await first.send(thread, "hello", f"{thread}-hello")
        assert answer["ok"] and answer["result"]["text"] == f"answer {thread}"
        acknowledged.append(f"{thread}-hello")
    in_flight = [first.start("send", thread=t, text="slow", input_id=f"{t}-slow") for t in THREADS]
    for thread in THREADS:
        await wait_for_record(store, stream_name("default", thread), _started(f"{thread}-slow"))

    first.kill()  # mid-turn, on every thread
    await first.proc.wait()
    for fut in in_flight:
        with pytest.raises(ConnectionError):
            await fut

    for thread in THREADS:
        result, _ = await send_until_owned(second, thread, "still there?", f"{thread}-next")
        assert result["status"] == "completed" and result["text"] == "taken over"
        acknowledged.append(f"{thread}-next")
        # The interrupted input, sent again: its verdict, and nothing runs.
        seq = await store.last_seq(stream_name("default", thread))
        retry = await second.send(thread, "slow", f"{thread}-slow")
        assert retry["ok"], retry
        assert retry["result"]["status"] == "failed"
        assert retry["result"]["code"] == "turn_abandoned"
        assert await store.last_seq(stream_name("default", thread)) == seq

    for thread in THREADS:
        runs = check_log(await store.read(stream_name("default", thread)))
        assert list(runs) == [f"{thread}-hello", f"{thread}-slow", f"{thread}-next"]
        assert runs[f"{thread}-slow"]["status"] == "failed"
        assert runs[f"{thread}-slow"]["code"] == "turn_abandoned"
        assert runs[f"{thread}-next"]["status"] == "completed"
    logged = {
        r.data["inputId"]
        for t in THREADS
        for r in await store.read(stream_name("default", t))
        if r.type == "input"
    }
    assert set(acknowledged) <= logged


async def test_a_tool_call_in_flight_when_its_host_died_gets_an_unknown_outcome_once(
    start_host: HostStarter, store: PostgresPersistence
) -> None:
    first = await start_host(
        "host-a", {"main": [[["tool", "charge", {"orderId": "42"}]]]}, lease_ttl=1.0
    )
    second = await start_host("host-b", {"main": [[["text", "Let me check order 42."]]]})
    first.start("send", thread="t1", text="charge order 42", input_id="charge")
    stream = stream_name("default", "t1")
    await wait_for_record(
        store,
        stream,
        lambda r: (
            r.type == "message"
            and any(p["type"] == "tool-call" for p in r.data["message"]["parts"])
        ),
    )

    first.kill()  # while the charge tool runs
    await first.proc.wait()
    result, _ = await send_until_owned(second, "t1", "did it work?", "ask")

    assert result["text"] == "Let me check order 42."
    records = await store.read(stream)
    runs = check_log(records)
    assert runs["charge"]["code"] == "turn_abandoned"
    results = [
        p
        for r in records
        if r.type == "message"
        for p in r.data["message"]["parts"]
        if p["type"] == "tool-result"
    ]
    assert len(results) == 1
    assert results[0]["name"] == "charge" and results[0]["isError"] is True
    assert results[0]["output"] == UNKNOWN_TOOL_OUTCOME


async def test_a_send_to_a_host_that_does_not_own_the_thread_raises_and_writes_nothing(
    start_host: HostStarter, store: PostgresPersistence
) -> None:
    first = await start_host("host-a", {"main": [[["text", "mine"]]]}, lease_ttl=30.0)
    second = await start_host("host-b", {"main": [[["text", "mine now"]]]}, lease_ttl=30.0)
    assert (await first.send("t1", "hi", "one"))["ok"]
    seq = await store.last_seq(stream_name("default", "t1"))

    refused = await second.send("t1", "me too", "two")

    assert refused["ok"] is False
    assert refused["code"] == "log_owned_elsewhere"
    assert refused["details"]["details"]["owner"] == "host-a"
    assert await store.last_seq(stream_name("default", "t1")) == seq
    # A host that closes gives its threads up at once: no lease to wait out.
    await first.close()
    answer = await second.send("t1", "me too", "two")
    assert answer["ok"] and answer["result"]["text"] == "mine now"


async def test_two_hosts_sending_to_one_thread_at_once_never_interleave_turns(
    start_host: HostStarter, store: PostgresPersistence
) -> None:
    replies = [[["pause", 0.02], ["text", "ok"]] for _ in range(40)]
    hosts = [
        await start_host("host-a", {"main": replies}, lease_ttl=0.2),
        await start_host("host-b", {"main": replies}, lease_ttl=0.2),
    ]

    async def sender(index: int) -> list[str]:
        taken = []
        for i in range(15):
            input_id = f"{hosts[index].host_id}-{i}"
            answer = await hosts[index].send("t1", f"message {i}", input_id)
            if answer["ok"]:
                taken.append(input_id)
            else:
                assert answer["code"] in ("log_owned_elsewhere", "log_conflict"), answer
            # Now and then a host goes quiet for longer than the lease, and
            # the other may take the thread.
            await asyncio.sleep(0.35 if i % (3 + index) == 2 else 0.01)
        return taken

    taken = [*await asyncio.gather(sender(0), sender(1))]

    runs = check_log(await store.read(stream_name("default", "t1")))
    assert sorted(runs) == sorted(taken[0] + taken[1])
    assert taken[0] and taken[1], "each host should have owned the thread at some point"
    assert all(run["status"] == "completed" for run in runs.values())
