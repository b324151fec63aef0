"""Runs and takeover, on every storage backend."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from agent_mem_vault.atproto import is_valid_tid, parse_tid, record_cid, validate_record
from agent_mem_vault.core.clock import ManualClock
from agent_mem_vault.core.errors import InvalidInputError, NotFoundError
from agent_mem_vault.core.ids import TidGenerator
from agent_mem_vault.runs import (
    Generator,
    HandoffEntry,
    Run,
    RunRegistry,
    RunStillCurrent,
    RunTakenOver,
)
from agent_mem_vault.store import Persistence

GEN = Generator("test-agent", "1.2.3", "https://example.com/agent")


async def test_start_run_mints_a_run_tid(persistence: Persistence) -> None:
    run = await RunRegistry(persistence).start_run("bot")
    assert is_valid_tid(run.tid)
    assert run.agent == "bot"
    await run.ensure_current()


async def test_starting_a_new_run_takes_the_agent_over(persistence: Persistence) -> None:
    registry = RunRegistry(persistence)
    old = await registry.start_run("bot")
    new = await registry.start_run("bot")
    with pytest.raises(RunTakenOver) as info:
        await old.ensure_current()
    assert info.value.by == new.tid
    assert info.value.code == "run_taken_over"
    await new.ensure_current()


async def test_one_run_is_current_per_agent_and_agents_are_independent(
    persistence: Persistence,
) -> None:
    registry = RunRegistry(persistence)
    a = await registry.start_run("alpha")
    b = await registry.start_run("beta")
    await a.ensure_current()
    await b.ensure_current()
    assert await registry.agents() == ["alpha", "beta"]


async def test_heartbeat_renews_the_lease_and_reports_a_takeover(persistence: Persistence) -> None:
    registry = RunRegistry(persistence, lease_seconds=60)
    old = await registry.start_run("bot")
    await old.heartbeat()
    status = await registry.status("bot")
    assert status.current is not None and status.current.alive
    await registry.start_run("bot")
    with pytest.raises(RunTakenOver):
        await old.heartbeat()


async def test_the_stopped_run_writes_the_handoff_keyed_by_the_new_runs_tid(
    persistence: Persistence,
) -> None:
    registry = RunRegistry(persistence, lease_seconds=60)
    old = await registry.start_run("bot", generator=GEN)
    new = await registry.start_run("bot")
    record = await old.write_handoff()
    assert record["$type"] == "garden.engram.agents.handoff"
    assert record["fromRun"] == old.tid
    assert record["toRun"] == new.tid
    assert record["generator"] == GEN.to_json()
    validate_record(record, rkey=new.tid)
    [entry] = await registry.handoffs("bot")
    assert entry == HandoffEntry("bot", new.tid, record, record_cid(record), "run")


async def taken_over(persistence: Persistence) -> tuple[RunRegistry, Run]:
    """A registry where a second run of ``bot`` took over from the first, returned."""
    registry = RunRegistry(persistence, lease_seconds=60)
    old = await registry.start_run("bot")
    await registry.start_run("bot")
    return registry, old


async def test_a_retried_handoff_does_not_land_and_returns_the_record_that_did(
    persistence: Persistence,
) -> None:
    registry, old = await taken_over(persistence)
    first = await old.write_handoff()
    again = await old.write_handoff()
    assert again == first
    assert len(await registry.handoffs("bot")) == 1


async def test_a_second_stale_copy_of_the_run_gets_the_record_that_landed(
    persistence_factory: Callable[[], Persistence],
) -> None:
    one = RunRegistry(persistence_factory(), lease_seconds=60)
    two = RunRegistry(persistence_factory(), lease_seconds=60)
    old = await one.start_run("bot", generator=Generator("first-copy", "1"))
    await one.start_run("bot")
    copy = await two.attach("bot", old.tid)
    landed = await old.write_handoff()
    assert await copy.write_handoff() == landed
    assert len(await two.handoffs("bot")) == 1


async def test_a_current_run_has_no_handoff_to_write(persistence: Persistence) -> None:
    run = await RunRegistry(persistence).start_run("bot")
    with pytest.raises(RunStillCurrent):
        await run.write_handoff()


async def test_a_crashed_runs_handoff_is_written_by_the_registry_when_its_lease_lapsed(
    persistence: Persistence,
) -> None:
    registry = RunRegistry(persistence)
    crashed = await registry.start_run("bot", generator=GEN, lease_seconds=0)
    status = await registry.status("bot")
    assert status.current is not None and not status.current.alive
    new = await registry.start_run("bot")
    [entry] = await registry.handoffs("bot")
    assert entry.written_by == "registry"
    assert entry.record["fromRun"] == crashed.tid
    assert entry.record["toRun"] == new.tid
    assert entry.record["generator"] == GEN.to_json()
    # The crashed run, if it wakes up, gets the same record back.
    assert await crashed.write_handoff() == entry.record


async def test_an_alive_run_is_not_acknowledged_for_until_it_writes(
    persistence: Persistence,
) -> None:
    registry, old = await taken_over(persistence)
    status = await registry.status("bot")
    assert status.pending == [old.tid]
    assert await registry.handoffs("bot") == []
    await old.write_handoff()
    assert (await registry.status("bot")).pending == []


async def test_takeovers_chain_and_list_runs_shows_each_runs_fate(
    persistence: Persistence,
) -> None:
    registry = RunRegistry(persistence, lease_seconds=60)
    runs = [await registry.start_run("bot") for _ in range(4)]
    for run in runs[:-1]:
        await run.write_handoff()
    states = await registry.list_runs("bot")
    assert [s.info.run for s in states] == [r.tid for r in runs]
    assert [s.state for s in states] == ["taken_over"] * 3 + ["current"]
    assert [s.taken_over_by for s in states[:-1]] == [r.tid for r in runs[1:]]
    assert all(s.handoff_written for s in states[:-1])
    records = [e.record for e in await registry.handoffs("bot")]
    assert [(r["fromRun"], r["toRun"]) for r in records] == [
        (a.tid, b.tid) for a, b in itertools.pairwise(runs)
    ]
    assert [parse_tid(r["toRun"]).timestamp for r in records] == sorted(
        parse_tid(r["toRun"]).timestamp for r in records
    )


async def test_records_are_never_updated_or_deleted_through_the_api() -> None:
    for cls in (RunRegistry, Run):
        public = {name for name in dir(cls) if not name.startswith("_")}
        words = ("update", "delete", "remove", "edit", "put", "replace")
        assert not {n for n in public if any(w in n for w in words)}, cls


async def test_attach_to_an_unknown_run_is_not_found(persistence: Persistence) -> None:
    registry = RunRegistry(persistence)
    await registry.start_run("bot")
    with pytest.raises(NotFoundError):
        await registry.attach("bot", "3kznmn7xqxl22")


async def refused_field(registry: RunRegistry, agent: Any, **options: Any) -> str:
    """The field that the ``InvalidInputError`` of ``start_run(agent, **options)`` names."""
    with pytest.raises(InvalidInputError) as info:
        await registry.start_run(agent, **options)
    return str(info.value.details["field"])


@pytest.mark.parametrize("agent", ["", "a/b", "..", "x" * 129, "white space", None])
async def test_a_bad_agent_name_is_refused_and_nothing_is_stored(
    persistence: Persistence, agent: object
) -> None:
    registry = RunRegistry(persistence)
    assert await refused_field(registry, agent) == "agent"
    assert await registry.agents() == []


async def test_a_bad_generator_is_refused_at_start_naming_the_field(
    persistence: Persistence,
) -> None:
    registry = RunRegistry(persistence)
    assert await refused_field(registry, "bot", generator={"name": "x"}) == "generator.version"
    assert await refused_field(registry, "bot", generator=Generator("", "1")) == "generator.name"
    assert await registry.agents() == []


async def test_reap_writes_the_handoff_for_a_replaced_run_whose_lease_lapsed(
    persistence: Persistence,
) -> None:
    registry = RunRegistry(persistence)
    alive = await registry.start_run("bot", lease_seconds=60)
    quiet = await registry.start_run("bot", lease_seconds=0)
    newest = await registry.start_run("bot", lease_seconds=60)
    # `quiet` lapsed at once: its handoff was written when `newest` took over.
    # `alive` was replaced while alive and owes its own record; reap leaves it alone.
    assert [e.record["fromRun"] for e in await registry.handoffs("bot")] == [quiet.tid]
    assert await registry.reap("bot") == []
    await persistence.release_lease(f"runs/bot/{alive.tid}", alive.tid)
    [entry] = await registry.reap("bot")
    assert (entry.record["fromRun"], entry.record["toRun"]) == (alive.tid, quiet.tid)
    assert entry.written_by == "registry"
    assert newest.tid not in {e.record["fromRun"] for e in await registry.handoffs("bot")}


async def test_a_lost_run_index_entry_is_rebuilt_from_the_log(persistence: Persistence) -> None:
    registry = RunRegistry(persistence, lease_seconds=60)
    old = await registry.start_run("bot")
    new = await registry.start_run("bot")
    # As if the process died between appending to the log and indexing the run.
    assert await persistence.delete("runs.runs", f"bot/{new.tid}")
    record = await old.write_handoff()
    assert record["toRun"] == new.tid
    assert (await registry.attach("bot", new.tid)).info.previous == old.tid


async def test_each_landed_record_is_given_to_the_listener_once(persistence: Persistence) -> None:
    seen: list[HandoffEntry] = []

    async def listener(entry: HandoffEntry) -> None:
        seen.append(entry)

    registry = RunRegistry(persistence, lease_seconds=60, on_handoff=listener)
    old = await registry.start_run("bot")
    await registry.start_run("bot")
    await old.write_handoff()
    await old.write_handoff()
    assert [e.record for e in seen] == [e.record for e in await registry.handoffs("bot")]


def _registry_at(
    store: Persistence, when: datetime, *, clock_id: int | None = None, **kwargs: Any
) -> RunRegistry:
    clock = ManualClock(when)
    return RunRegistry(store, clock=clock, tids=TidGenerator(clock, clock_id), **kwargs)


async def test_a_run_started_on_a_host_whose_clock_is_behind_still_gets_a_later_tid(
    persistence_factory: Callable[[], Persistence],
) -> None:
    ahead = _registry_at(persistence_factory(), datetime(2026, 6, 1, 12, tzinfo=UTC))
    behind = _registry_at(persistence_factory(), datetime(2026, 6, 1, 11, tzinfo=UTC))
    old = await ahead.start_run("bot", lease_seconds=60)
    new = await behind.start_run("bot", lease_seconds=60)
    assert new.tid > old.tid
    record = await old.write_handoff()
    assert (record["fromRun"], record["toRun"]) == (old.tid, new.tid)
    await new.ensure_current()


async def test_two_hosts_minting_the_same_tid_in_the_same_microsecond_still_hand_off(
    persistence_factory: Callable[[], Persistence],
) -> None:
    when = datetime(2026, 6, 1, 12, tzinfo=UTC)
    one = _registry_at(persistence_factory(), when, clock_id=7, lease_seconds=60)
    two = _registry_at(persistence_factory(), when, clock_id=7, lease_seconds=60)
    old = await one.start_run("bot")
    new = await two.start_run("bot")
    assert new.tid != old.tid
    record = await old.write_handoff()
    assert (record["fromRun"], record["toRun"]) == (old.tid, new.tid)
    assert [e.rkey for e in await two.handoffs("bot")] == [new.tid]


async def test_runs_of_two_agents_that_share_a_tid_are_each_found(
    persistence_factory: Callable[[], Persistence],
) -> None:
    when = datetime(2026, 6, 1, 12, tzinfo=UTC)
    a = await _registry_at(persistence_factory(), when, clock_id=7).start_run("alpha")
    b = await _registry_at(persistence_factory(), when, clock_id=7).start_run("beta")
    assert a.tid == b.tid
    registry = RunRegistry(persistence_factory())
    assert (await registry.attach("alpha", a.tid)).agent == "alpha"
    assert (await registry.attach("beta", b.tid)).agent == "beta"


async def test_a_failing_handoff_listener_does_not_fail_the_write_that_landed(
    persistence: Persistence, caplog: pytest.LogCaptureFixture
) -> None:
    def listener(entry: HandoffEntry) -> None:
        raise OSError("the vault disk is full")

    registry = RunRegistry(persistence, lease_seconds=60, on_handoff=listener)
    old = await registry.start_run("bot")
    lapsed = await registry.start_run("bot", lease_seconds=0)
    # The registry writes the lapsed run's record while starting the next run:
    # the start must still succeed, or the caller would start yet another run.
    newest = await registry.start_run("bot")
    await newest.ensure_current()
    record = await old.write_handoff()
    assert record["toRun"] == lapsed.tid
    assert {e.rkey for e in await registry.handoffs("bot")} == {lapsed.tid, newest.tid}
    assert "the vault disk is full" in caplog.text


@pytest.mark.parametrize("lease", [-1.0, float("nan"), float("inf")])
async def test_a_lease_that_is_not_a_finite_number_of_seconds_is_refused(
    persistence: Persistence, lease: float
) -> None:
    registry = RunRegistry(persistence)
    with pytest.raises(InvalidInputError) as info:
        await registry.start_run("bot", lease_seconds=lease)
    assert info.value.details["field"] == "lease_seconds"
    assert await registry.agents() == []


async def test_a_handoff_record_is_stored_once_and_never_rewritten(
    persistence: Persistence,
) -> None:
    registry = RunRegistry(persistence, lease_seconds=60)
    old = await registry.start_run("bot")
    new = await registry.start_run("bot")
    for _ in range(3):
        await old.write_handoff()
    await registry.reap("bot")
    doc = await persistence.get("runs.handoffs", f"bot/{new.tid}")
    assert doc is not None and doc.version == 1
