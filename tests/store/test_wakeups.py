"""Wake-ups for watches: no lost wake-up, nothing left behind, closed loops skipped."""

from __future__ import annotations

import asyncio
import contextlib

from agent_mem_vault.store.wakeups import Wakeups


async def test_a_wake_resolves_every_future_waiting_on_that_stream_only() -> None:
    wakeups = Wakeups()
    a, b, other = wakeups.register("s"), wakeups.register("s"), wakeups.register("t")
    wakeups.wake("s")
    await asyncio.wait_for(asyncio.gather(a, b), 1)
    assert not other.done()
    assert wakeups.count() == 1


async def test_a_wait_that_was_cancelled_and_discarded_leaves_nothing_behind() -> None:
    wakeups = Wakeups()
    for _ in range(100):
        fut = wakeups.register("s")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(fut, 0.001)
        wakeups.discard("s", fut)
    assert wakeups.count() == 0


async def test_a_future_of_another_threads_loop_is_woken_from_this_one() -> None:
    wakeups = Wakeups()
    registered = asyncio.Event()
    loop = asyncio.get_running_loop()

    async def wait_in_other_loop() -> str:
        fut = wakeups.register("s")
        loop.call_soon_threadsafe(registered.set)
        await asyncio.wait_for(fut, 5)
        return "woken"

    waiting = asyncio.create_task(asyncio.to_thread(asyncio.run, wait_in_other_loop()))
    await registered.wait()
    wakeups.wake("s")
    assert await waiting == "woken"


async def test_waking_a_future_whose_loop_has_closed_is_skipped_without_error() -> None:
    wakeups = Wakeups()

    async def register_and_leave() -> None:
        wakeups.register("s")

    await asyncio.to_thread(asyncio.run, register_and_leave())
    wakeups.wake("s")
    wakeups.wake_all()
    assert wakeups.count() == 0
