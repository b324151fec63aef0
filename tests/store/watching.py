"""A watch run in a task until it has seen a number of records, as the store tests use it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from agent_mem_vault.store import LogRecord, Persistence


@dataclass
class Watching:
    """What the watch has seen so far, and ``first``, set once it has seen anything."""

    records: list[LogRecord] = field(default_factory=list)
    first: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    @property
    def seqs(self) -> list[int]:
        return [r.seq for r in self.records]

    async def done(self, within: float) -> None:
        """Wait until the watch has seen all it waits for (``TimeoutError`` after ``within`` s)."""
        assert self.task is not None
        await asyncio.wait_for(self.task, within)


def watch_until(store: Persistence, stream: str, count: int) -> Watching:
    """Start watching ``stream`` from its start; the watch ends after ``count`` records."""
    watching = Watching()

    async def consume() -> None:
        async for record in store.watch(stream):
            watching.records.append(record)
            watching.first.set()
            if len(watching.records) == count:
                return

    watching.task = asyncio.create_task(consume())
    return watching
