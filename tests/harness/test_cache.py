"""A host keeps a bounded number of threads in memory; the log stays the truth."""

from __future__ import annotations

import pytest

from agent_mem_vault.core.clock import ManualClock
from agent_mem_vault.core.errors import InvalidInputError
from agent_mem_vault.harness import HarnessHost, LogOwnedElsewhereError, define_harness
from agent_mem_vault.harness.testing import ScriptedModel, text

from .conftest import HostFactory


async def test_a_host_forgets_idle_threads_beyond_its_cache_and_reads_them_back_from_the_log(
    make_host: HostFactory,
) -> None:
    clock = ManualClock()
    model = ScriptedModel([text(f"answer {i}") for i in range(7)])
    desk = define_harness(name="acme/desk", model=model)
    host = make_host(clock=clock, lease_ttl=5.0, max_cached_threads=2)

    for i in range(5):
        session = await host.open(desk, thread_id=f"t{i}")
        assert (await session.send(f"question {i}")).text == f"answer {i}"
    # The state goes beyond the cap; the leases of all five stay with this host.
    assert host.threads.cached == 2
    assert host.threads.leases_without_state == 3

    clock.advance(seconds=6)  # the leases lapse; the threads are idle
    session = await host.open(desk, thread_id="t5")
    await session.send("question 5")
    assert host.threads.cached == 2
    assert host.threads.leases_without_state <= 1  # the one forgotten just now

    # A forgotten thread carries on from its log, with its whole transcript.
    again = await host.open(desk, thread_id="t0")
    result = await again.send("one more")
    assert result.text == "answer 6"
    texts = [m.text for m in (await again.snapshot()).messages]
    assert texts == ["question 0", "answer 0", "one more", "answer 6"]
    assert host.threads.cached == 2


async def test_a_thread_whose_state_was_forgotten_stays_with_its_host_until_the_host_closes(
    make_host: HostFactory,
) -> None:
    desk = define_harness(name="acme/desk", model=ScriptedModel([text("hi")] * 6))
    first = make_host(max_cached_threads=1)
    for i in range(3):
        await (await first.open(desk, thread_id=f"t{i}")).send("hello")
    assert first.threads.cached == 1
    assert first.threads.leases_without_state == 2

    second = make_host()
    with pytest.raises(LogOwnedElsewhereError):
        await (await second.open(desk, thread_id="t0")).send("mine now?")

    # The first host carries on with it; closing gives every lease up, forgotten or not.
    assert (await (await first.open(desk, thread_id="t0")).send("again")).text == "hi"
    await first.close()
    assert first.threads.leases_without_state == 0
    assert (await (await second.open(desk, thread_id="t0")).send("mine now?")).text == "hi"
    assert (await (await second.open(desk, thread_id="t1")).send("and this?")).text == "hi"


@pytest.mark.parametrize("value", [0, -1, 2.5, "10", True])
async def test_the_thread_cache_must_hold_at_least_one_thread(value: object) -> None:
    with pytest.raises(InvalidInputError, match="max_cached_threads"):
        HarnessHost(max_cached_threads=value)  # type: ignore[arg-type]
