"""The one place a thread's log is read and written.

Appends always name the sequence number they follow (``expected_seq``), so
two writers can never interleave. Writing also needs the log's lease: one
host owns a thread's log at a time, renews the lease as it writes, and
releases it when it closes. A host that finds the lease held by another
raises ``LogOwnedElsewhereError`` and writes nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any

from ..core.clock import Clock
from ..store import LogConflictError, Persistence
from .errors import LogOwnedElsewhereError
from .log import Record, replay
from .state import ThreadState

__all__ = ["ThreadLog", "lease_name"]


def lease_name(stream: str) -> str:
    return f"log-owner:{stream}"


class ThreadLog:
    """A host's view of one thread's log: its state, kept current, and the writer."""

    def __init__(
        self, persistence: Persistence, stream: str, *, owner: str, lease_ttl: float, clock: Clock
    ) -> None:
        self.persistence = persistence
        self.stream = stream
        self.owner = owner
        self.lease_ttl = lease_ttl
        self._clock = clock
        self.state = ThreadState()
        self._lease_until = float("-inf")

    async def refresh(self) -> ThreadState:
        """Fold in whatever was appended since this host last read."""
        records = await self.persistence.read(self.stream, after=self.state.seq)
        replay(records, self.state)
        return self.state

    async def own(self) -> None:
        """Hold the log's lease (renewed once half of it has passed)."""
        now = self._clock.monotonic()
        if now < self._lease_until - self.lease_ttl / 2:
            return
        lease = await self.persistence.acquire_lease(
            lease_name(self.stream), self.owner, self.lease_ttl
        )
        if lease.owner != self.owner:
            self._lease_until = float("-inf")
            raise LogOwnedElsewhereError(
                f"another host ({lease.owner}) owns the log of this thread until "
                f"{lease.expires_at.isoformat()}; send through that host or retry after it lapses",
                stream=self.stream,
                owner=lease.owner,
            )
        self._lease_until = now + self.lease_ttl

    @asynccontextmanager
    async def renewing(self) -> AsyncIterator[None]:
        """Keep renewing the lease while a long step (a turn, a model call) runs.

        A model call may take longer than the lease; without renewal another
        host could take the thread over in the middle of a live turn.
        """

        async def beat() -> None:
            while True:
                await asyncio.sleep(self.lease_ttl / 3)
                lease = await self.persistence.acquire_lease(
                    lease_name(self.stream), self.owner, self.lease_ttl
                )
                if lease.owner != self.owner:
                    return  # lost it; the next append raises LogOwnedElsewhereError
                self._lease_until = self._clock.monotonic() + self.lease_ttl

        task = asyncio.create_task(beat())
        try:
            yield
        finally:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task

    async def release(self) -> None:
        if self._lease_until != float("-inf"):
            await self.persistence.release_lease(lease_name(self.stream), self.owner)
            self._lease_until = float("-inf")

    async def append(self, records: Sequence[Record]) -> ThreadState:
        """Append after the last record this host saw, or fail with nothing written."""
        if not records:
            return self.state
        await self.own()
        try:
            written = await self.persistence.append(
                self.stream, list(records), expected_seq=self.state.seq
            )
        except LogConflictError:
            await self.refresh()
            raise
        return replay(written, self.state)

    async def append_one(self, kind: str, data: dict[str, Any]) -> ThreadState:
        return await self.append([(kind, data)])
