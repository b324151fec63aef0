"""Events across hosts: a session on host B streams the turns that host A runs.

Host A is another OS process; host B is this test's process with its own
PostgreSQL handle, so every event B sees came through the database (LISTEN/
NOTIFY and the catch-up read), in order, with no gap and no duplicate. B's
safety poll is an hour: only notifications can wake its streams in time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_mem_vault.harness import Event, HarnessHost
from agent_mem_vault.harness.log import stream_name
from agent_mem_vault.store import Persistence
from agent_mem_vault.store.postgres import postgres_persistence

from .conftest import HostStarter
from .host_worker import build_harness

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

SPEC: dict[str, Any] = {
    "main": [[["text", "Billing can do that."], ["tool", "handoff", {"to": "billing"}]]],
    "billing": [
        [["pause", 0.2], ["text", "Your refund for order 42 is on its way."]],
        [["pause", 0.2], ["text", "It takes three days."]],
    ],
}


async def collect(events: Any, turns: int) -> list[Event]:
    """Events until ``turns`` turns have finished."""
    seen: list[Event] = []
    async for event in events:
        seen.append(event)
        if sum(e.name == "run.finished" for e in seen) == turns:
            return seen
    raise AssertionError("the event stream ended")


@pytest.fixture
async def store(dsn: str) -> AsyncIterator[Persistence]:
    """Host B's own PostgreSQL handle. Its safety poll is an hour: only notifications can
    wake its streams in time."""
    store = postgres_persistence(dsn, min_size=1, max_size=3, safety_poll=3600)
    yield store
    await store.close()


@pytest.fixture
async def viewer(store: Persistence) -> AsyncIterator[HarnessHost]:
    """Host B, in this test's process: it runs no turn, it only watches."""
    viewer = HarnessHost(persistence=store, host_id="host-b")
    yield viewer
    await viewer.close()


async def test_a_session_on_another_host_sees_every_event_of_a_turn_in_order_once(
    start_host: HostStarter, store: Persistence, viewer: HarnessHost
) -> None:
    session = await viewer.open(build_harness({}), thread_id="t1")
    live = asyncio.create_task(collect(session.events(), turns=2))
    runner = await start_host("host-a", SPEC)

    first = await runner.send("t1", "I want a refund for order 42.", "one")
    resumed_at = (await session.snapshot()).seq
    resumed = asyncio.create_task(collect(session.events(after=resumed_at), turns=1))
    second = await runner.send("t1", "How long?", "two")
    seen = await asyncio.wait_for(live, 20)
    tail = await asyncio.wait_for(resumed, 20)

    assert first["result"]["text"].startswith("Billing can do that.\n\nbilling:\n")
    assert second["result"]["text"] == "billing:\nIt takes three days."
    log = await store.read(stream_name("default", "t1"))
    assert [e.seq for e in seen] == list(range(1, len(log) + 1))
    assert [(e.name, e.value) for e in seen] == [(r.type, r.data) for r in log]
    assert [e.seq for e in tail] == [r.seq for r in log if r.seq > resumed_at]
    handoffs = [e.value for e in seen if e.name == "harness.handoff"]
    assert [(h["from"], h["to"], h["by"]) for h in handoffs] == [(None, "billing", "tool")]


async def test_sessions_on_two_hosts_see_the_same_events_while_both_hosts_write(
    start_host: HostStarter, store: Persistence, viewer: HarnessHost
) -> None:
    # Ownership moves from host A to host C while host B watches; B's stream
    # shows both hosts' turns as one ordered log.
    session = await viewer.open(build_harness({}), thread_id="t1")
    live = asyncio.create_task(collect(session.events(), turns=2))
    a = await start_host("host-a", {"main": [[["text", "from a"]]]})
    c = await start_host("host-c", {"main": [[["text", "from c"]]]})
    assert (await a.send("t1", "one", "one"))["ok"]
    await a.close()
    assert (await c.send("t1", "two", "two"))["ok"]

    seen = await asyncio.wait_for(live, 20)

    log = await store.read(stream_name("default", "t1"))
    assert [(e.seq, e.name) for e in seen] == [(r.seq, r.type) for r in log]
    finished = [e.value["text"] for e in seen if e.name == "run.finished"]
    assert finished == ["from a", "from c"]
