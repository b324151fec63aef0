"""Ownership of a thread's log across hosts: renewal, fencing, and closing a turn left in flight.

Each test runs on every backend. A host's failures are injected by wrapping
its persistence (the public protocol, nothing patched): renewals that fail,
a renewal that silently does nothing (a host that *believes* it still owns
the thread), an append that never comes back (a host that dies right there).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from agent_mem_vault.core.errors import UnavailableError
from agent_mem_vault.harness import (
    HUMAN,
    Endpoint,
    Envelope,
    Harness,
    HarnessHost,
    LogOwnedElsewhereError,
    Routing,
    TurnResult,
)
from agent_mem_vault.harness.log import stream_name
from agent_mem_vault.harness.testing import ScriptedModel, pause, text, tool_call
from agent_mem_vault.store import Lease, Persistence

from .conftest import HostFactory
from .support import billing_agent, gated_harness, support_harness

Records = Sequence[tuple[str, Mapping[str, Any]]]
"""What ``Persistence.append`` takes: (type, data) pairs."""


class Faulty:
    """A persistence that behaves like ``inner`` except where a test says otherwise."""

    def __init__(self, inner: Persistence) -> None:
        self.inner = inner
        self.acquires = 0
        self.fail_acquire: set[int] = set()  # these acquire calls raise (1-based)
        self.fake_after: int | None = None  # later acquires pretend to renew
        self.stall_run_finished = False  # an append with run.finished never returns

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def acquire_lease(self, name: str, owner: str, ttl: float) -> Lease:
        self.acquires += 1
        if self.acquires in self.fail_acquire:
            raise UnavailableError("the database went away for a moment")
        if self.fake_after is not None and self.acquires > self.fake_after:
            return Lease(name, owner, datetime.now(UTC), 0)
        return await self.inner.acquire_lease(name, owner, ttl)

    async def append(
        self,
        stream: str,
        records: Records,
        *,
        expected_seq: int | None = None,
    ) -> Any:
        if self.stall_run_finished and any(t == "run.finished" for t, _ in records):
            await asyncio.Event().wait()  # the process dies before this lands
        return await self.inner.append(stream, records, expected_seq=expected_seq)

    async def append_owned(
        self,
        stream: str,
        records: Records,
        *,
        expected_seq: int | None,
        lease: str,
        owner: str,
        ttl: float,
    ) -> Any:
        # The lease and the append go separately, so that every fault above applies.
        taken = await self.acquire_lease(lease, owner, ttl)
        if taken.owner != owner:
            return [], taken
        return await self.append(stream, records, expected_seq=expected_seq), taken


def faulty_host(make_host: HostFactory, **kwargs: Any) -> tuple[HarnessHost, Faulty]:
    host = make_host(**kwargs)
    faulty = Faulty(host.persistence)
    host.persistence = faulty
    return host, faulty


async def stale_turn(
    make_host: HostFactory, release: asyncio.Event
) -> tuple[HarnessHost, Harness, asyncio.Task[TurnResult]]:
    """A turn on a host whose renewals silently do nothing, left until its lease lapsed.

    The host still believes it owns thread ``t1``; the turn's model answers
    "stale answer" once ``release`` is set.
    """
    harness = gated_harness(release, "stale answer")
    first, faulty = faulty_host(make_host, lease_ttl=0.3)
    faulty.fake_after = 1
    turn = asyncio.create_task(
        (await first.open(harness, thread_id="t1")).send("slow", input_id="slow")
    )
    await asyncio.sleep(0.45)  # the lease lapses
    return first, harness, turn


async def types_of(host: HarnessHost, thread: str = "t1") -> list[str]:
    return [r.type for r in await host.persistence.read(stream_name("default", thread))]


async def until_logged(host: HarnessHost, kind: str) -> None:
    """Wait until the thread's log has a ``kind`` record (the turn got that far)."""
    for _ in range(1000):
        if kind in await types_of(host):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"no {kind} record in the log")


async def test_a_failed_lease_renewal_is_retried_and_the_turn_keeps_its_thread(
    make_host: HostFactory,
) -> None:
    release = asyncio.Event()  # the model answers only once the second host was refused
    harness = gated_harness(release, "slow answer")
    first, faulty = faulty_host(make_host, lease_ttl=0.45)
    faulty.fail_acquire = {2}  # the first renewal during the turn fails
    turn = asyncio.create_task((await first.open(harness, thread_id="t1")).send("slow"))
    await asyncio.sleep(0.7)  # past the TTL: only the retried renewal holds the thread

    second = make_host()
    with pytest.raises(LogOwnedElsewhereError):
        await (await second.open(harness, thread_id="t1")).send("me too")
    release.set()

    assert (await asyncio.wait_for(turn, 10)).text == "slow answer"
    assert faulty.acquires >= 3


async def test_a_host_that_believes_it_still_owns_a_thread_writes_nothing_after_a_takeover(
    make_host: HostFactory,
) -> None:
    # The first host's renewals silently do nothing (a stalled connection that
    # still says yes): its lease lapses mid-turn while it thinks it holds it.
    release = asyncio.Event()  # the stale model answers only after the takeover
    _first, _, turn = await stale_turn(make_host, release)
    second = make_host()
    other = support_harness(ScriptedModel([text("fresh")]), [billing_agent(ScriptedModel([]))])
    fresh = await (await second.open(other, thread_id="t1")).send("new", input_id="new")
    release.set()

    stale = await asyncio.wait_for(turn, 10)

    # The stale host's reply never lands; it reports what the log says.
    assert (stale.status, stale.code) == ("failed", "turn_abandoned")
    assert fresh.text == "fresh"
    snapshot = await (await second.open(other, thread_id="t1")).snapshot()
    assert "stale answer" not in [m.text for m in snapshot.messages]
    assert (await types_of(second)).count("run.finished") == 2


async def test_a_turn_left_after_handing_to_a_person_is_finished_as_interrupted(
    make_host: HostFactory,
) -> None:
    main = ScriptedModel([[text("Let me get a person."), tool_call("handoff", {"to": HUMAN})]])
    harness = support_harness(
        main,
        [billing_agent(ScriptedModel([]))],
        routing=Routing(router=lambda ctx: None, allow_handoff_to_human=True),
    )
    first, faulty = faulty_host(make_host, lease_ttl=0.2)
    faulty.stall_run_finished = True
    turn = asyncio.create_task(
        (await first.open(harness, thread_id="t1")).send("a person please", input_id="p")
    )
    await until_logged(first, "wait.opened")
    turn.cancel()  # the host dies before run.finished lands
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(turn, 10)
    await asyncio.sleep(0.3)  # its lease lapses

    second = make_host()
    session = await second.open(harness, thread_id="t1")
    retry = await session.send("a person please", input_id="p")

    assert retry.status == "interrupted"
    assert retry.code is None
    assert retry.text == "Let me get a person."
    snapshot = await session.snapshot()
    assert snapshot.status == "paused"
    assert [w.kind for w in snapshot.pending_waits] == ["human"]
    assert (await types_of(second)).count("run.finished") == 1


async def test_a_thread_whose_turn_was_taken_over_runs_the_next_turn_normally(
    make_host: HostFactory,
) -> None:
    harness = support_harness(
        ScriptedModel([[pause(30), text("never")]]), [billing_agent(ScriptedModel([]))]
    )
    first = make_host(lease_ttl=0.2)
    turn = asyncio.create_task((await first.open(harness, thread_id="t1")).send("slow"))
    await until_logged(first, "run.started")
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(turn, 10)
    await asyncio.sleep(0.3)

    second = make_host()
    next_model = ScriptedModel([text("here")])
    other = support_harness(next_model, [billing_agent(ScriptedModel([]))])
    result = await (await second.open(other, thread_id="t1")).send("hello?")

    assert result.text == "here"
    # The next model call sees the transcript with the abandoned turn closed.
    assert [m.text for m in next_model.calls[0].messages] == ["slow", "hello?"]


async def test_two_hosts_finishing_one_transfer_at_once_announce_it_once(
    make_host: HostFactory,
) -> None:
    from agent_mem_vault.harness.events import HOST_STREAM
    from agent_mem_vault.harness.transfer import TRANSFERS, _announce

    first, second = make_host(), make_host()
    await first.persistence.append(HOST_STREAM, [("other", {"transferId": "x"})])
    await first.persistence.insert(TRANSFERS, "default/move-1", {"status": "started"})
    ends = ({"threadId": "a"}, {"threadId": "b"})

    await asyncio.gather(
        *(
            _announce(host.threads, "default", "move-1", *ends, None, host_seq=1)
            for host in (first, second)
            for _ in range(3)
        )
    )

    events = await first.persistence.read(HOST_STREAM)
    assert [e.data["transferId"] for e in events if e.type == "transferred"] == ["move-1"]
    plan = await first.persistence.get(TRANSFERS, "default/move-1")
    assert plan is not None and plan.value["status"] == "done"


async def test_a_snapshot_read_during_a_stale_turn_does_not_let_that_turn_write_after_a_takeover(
    make_host: HostFactory,
) -> None:
    # As above, and while the stale turn still waits for its model, someone reads
    # the thread on the stale host. The read must not move the turn's fencing
    # point (expected_seq) past the other host's records.
    release = asyncio.Event()  # the stale model answers only after the takeover and the read
    first, harness, turn = await stale_turn(make_host, release)
    second = make_host()
    other = support_harness(ScriptedModel([text("fresh")]), [billing_agent(ScriptedModel([]))])
    await (await second.open(other, thread_id="t1")).send("new", input_id="new")

    seen = await (await first.open(harness, thread_id="t1")).snapshot()
    release.set()
    stale = await asyncio.wait_for(turn, 10)

    assert "fresh" in [m.text for m in seen.messages]
    assert (stale.status, stale.code) == ("failed", "turn_abandoned")
    records = await second.persistence.read(stream_name("default", "t1"))
    assert not any(
        p.get("text") == "stale answer"
        for r in records
        if r.type == "message"
        for p in r.data["message"]["parts"]
    )
    assert [r.type for r in records].count("run.finished") == 2


class CountingReads:
    """A persistence that counts the log reads of each stream."""

    def __init__(self, inner: Persistence) -> None:
        self.inner = inner
        self.reads: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def read(self, stream: str, **kwargs: Any) -> Any:
        self.reads.append(stream)
        return await self.inner.read(stream, **kwargs)


async def test_a_host_that_kept_its_lease_writes_the_next_turn_without_reading_the_log_first(
    make_host: HostFactory,
) -> None:
    model = ScriptedModel([text("one"), text("two")])
    host = make_host()
    counting = CountingReads(host.persistence)
    host.persistence = counting
    session = await host.open(support_harness(model, []), thread_id="t1")
    await session.send("first")
    counting.reads.clear()

    assert (await session.send("second")).text == "two"

    # Nobody else could write while this host held the lease: nothing to read.
    assert stream_name("default", "t1") not in counting.reads
    assert [m.text for m in model.calls[1].messages] == ["first", "one", "second"]


async def test_after_a_gap_in_its_lease_a_host_reads_what_another_host_wrote_before_it_writes(
    make_host: HostFactory,
) -> None:
    first_model = ScriptedModel([text("one"), text("three")])
    first = make_host(lease_ttl=0.2)
    session = await first.open(support_harness(first_model, []), thread_id="t1")
    await session.send("first")
    await asyncio.sleep(0.3)  # the lease lapses

    second = make_host()
    other = support_harness(ScriptedModel([text("two")]), [])
    await (await second.open(other, thread_id="t1")).send("second")
    await second.close()  # gives the thread up

    assert (await session.send("third")).text == "three"
    assert [m.text for m in first_model.calls[1].messages] == [
        "first",
        "one",
        "second",
        "two",
        "third",
    ]


async def test_a_transfer_after_a_gap_in_the_lease_reads_the_source_again_before_writing_it(
    make_host: HostFactory,
) -> None:
    desk = support_harness(ScriptedModel([text("one")]), [], name="acme/desk")
    first = make_host(lease_ttl=0.2)
    await (await first.open(desk, thread_id="t1")).send("first")
    await asyncio.sleep(0.3)  # the lease lapses

    second = make_host()
    other = support_harness(ScriptedModel([text("two")]), [], name="acme/desk")
    await (await second.open(other, thread_id="t1")).send("second")
    await second.close()

    # The transfer takes the source's lease before it writes there: a new holding.
    team = support_harness(ScriptedModel([]), [], name="acme/team")
    moved = await first.transfer(
        from_=Endpoint(desk, "t1"), to=Endpoint(team), envelope=Envelope(messages="all")
    )
    records = await first.persistence.read(stream_name("default", "t1"))
    assert [r.type for r in records].count("harness.transferred") == 1
    copied = await first.persistence.read(stream_name("default", moved.thread_id))
    texts = [r.data["message"]["parts"][0]["text"] for r in copied if r.type == "message"]
    assert texts == ["first", "one", "second", "two"]
