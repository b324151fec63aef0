"""The server's call runner: writes on the loop when the vault lock is free, on
the worker when it is not, and every call sees the writes sent before it."""

from __future__ import annotations

import asyncio
import fcntl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest

from agent_mem_vault.mcp import ServerSettings
from agent_mem_vault.mcp.runner import Runner
from agent_mem_vault.vault import Handoff, Vault
from agent_mem_vault.vault.folder.files import LOCK_FILE, LockBusy

from .conftest import NS

T = TypeVar("T")


@contextmanager
def held_elsewhere(vault_path: Path) -> Iterator[None]:
    """The vault lock, held on an open file of its own, as another process holds it."""
    with (vault_path / LOCK_FILE).open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)


def handoff_notes(vault_path: Path) -> list[Path]:
    return list(vault_path.glob("**/handoffs/*.md"))


def on_thread(fn: Callable[[], T], threads: list[str]) -> Callable[[], T]:
    """``fn``, noting the name of the thread that runs it."""

    def noted() -> T:
        threads.append(threading.current_thread().name)
        return fn()

    return noted


def create(vault: Vault, summary: str) -> Callable[[], Handoff]:
    return lambda: vault.create_handoff(to="codex", summary=summary, context="c", namespace=NS)


def test_a_write_runs_on_the_loop_when_the_lock_is_free(vault: Vault) -> None:
    threads: list[str] = []

    async def scenario() -> Handoff | None:
        run = Runner(vault, ServerSettings(agent="claude-code", namespace=NS))
        await run.value(on_thread(create(vault, "inline"), threads))
        return await run.value(
            on_thread(lambda: vault.peek_handoff(agent="codex", namespace=NS), threads),
            read_only=True,
        )

    seen = asyncio.run(scenario())
    assert threads == [threading.current_thread().name] * 2
    assert seen is not None and seen.summary == "inline"


def test_writes_on_the_worker_and_on_the_loop_keep_their_order(
    vault: Vault, vault_path: Path
) -> None:
    threads: list[str] = []
    loop_thread = threading.current_thread().name

    async def scenario() -> list[Handoff | None]:
        run = Runner(vault, ServerSettings(agent="claude-code", namespace=NS))
        with held_elsewhere(vault_path):
            # The lock is taken: the write goes, untouched, to the worker, which waits.
            first = asyncio.ensure_future(run.value(on_thread(create(vault, "first"), threads)))
            await asyncio.sleep(0)  # the task's first step: the lock is tried, and given up
            assert run._queued == 1 and handoff_notes(vault_path) == []
            # Sent behind it: they go to the worker too, and see it.
            peek = asyncio.ensure_future(
                run.value(
                    on_thread(lambda: vault.peek_handoff(agent="codex", namespace=NS), threads),
                    read_only=True,
                )
            )
            second = asyncio.ensure_future(run.value(on_thread(create(vault, "second"), threads)))
            await asyncio.sleep(0)
            assert run._queued == 3
        seen = await peek
        await asyncio.gather(first, second)
        # The worker is idle and the lock free: this write runs on the loop, after them.
        await run.value(on_thread(create(vault, "third"), threads))
        newest = await run.value(
            on_thread(lambda: vault.peek_handoff(agent="codex", namespace=NS), threads),
            read_only=True,
        )
        return [seen, newest]

    seen, newest = asyncio.run(scenario())
    assert threads[:3] == [threads[0]] * 3 and threads[0] != loop_thread
    assert threads[3:] == [loop_thread] * 2
    assert seen is not None and seen.summary == "first"
    assert newest is not None and newest.summary == "third"
    pending = vault.list_handoffs(namespace=NS, status="pending")
    assert [h.summary for h in sorted(pending, key=lambda h: h.id)] == ["first", "second", "third"]


def test_at_once_gives_up_before_the_call_when_the_lock_is_held(
    vault: Vault, vault_path: Path
) -> None:
    ran: list[str] = []
    with held_elsewhere(vault_path), pytest.raises(LockBusy):
        vault.at_once(on_thread(create(vault, "refused"), ran))
    assert ran == []
    assert handoff_notes(vault_path) == []
    made = vault.at_once(create(vault, "taken"))
    assert [h.id for h in vault.list_handoffs(namespace=NS)] == [made.id]


def test_at_once_gives_up_while_another_thread_has_the_vault(vault: Vault) -> None:
    inside, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with vault.one_look():
            inside.set()
            leave.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert inside.wait(10)
        with pytest.raises(LockBusy):
            vault.at_once(create(vault, "refused"))
    finally:
        leave.set()
        holder.join()
    assert vault.list_handoffs(namespace=NS) == []
