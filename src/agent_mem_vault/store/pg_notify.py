"""LISTEN/NOTIFY for the PostgreSQL persistence: how a watch hears of other hosts' appends.

Each append notifies on the schema's channel in its own transaction, so only
committed appends are announced. One :class:`NotifyListener` per persistence
handle holds a dedicated connection that LISTENs, and turns each notification
(its payload is the stream name) into a wake-up of that stream's watches.
Watches never trust a notification for content: a wake-up only triggers a
catch-up read from the last sequence number they saw. So when the connection
drops and notifications are lost, waking every watch on reconnect is enough
to lose nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
from contextlib import suppress

import psycopg
from psycopg import sql

from .wakeups import Wakeups

__all__ = ["NotifyListener", "channel_for"]

_MAX_RETRY_DELAY = 5.0


def channel_for(schema: str) -> str:
    """The NOTIFY channel of one schema.

    Channels are per database; naming the schema in the channel keeps hosts on
    other schemas of the same database from waking our watches.

    >>> channel_for("public")
    'amv_log_efa1f375d76194fa'
    """
    return "amv_log_" + hashlib.sha256(schema.encode()).hexdigest()[:16]


class NotifyListener:
    """One LISTEN connection, reconnecting with back-off until stopped."""

    def __init__(self, dsn: str, wakeups: Wakeups, *, connect_timeout: float) -> None:
        self.dsn = dsn
        self.channel = channel_for("public")
        """Set by the persistence once it knows its schema, before the first start."""
        self._wakeups = wakeups
        self._connect_timeout = connect_timeout
        self._task: asyncio.Task[None] | None = None
        self._up = asyncio.Event()
        self._stopped = False

    @property
    def listening(self) -> bool:
        """Whether notifications arrive now (else watches should poll more often)."""
        return self._up.is_set()

    async def start(self) -> None:
        """Start listening if not already; wait (up to the connect timeout) until it does."""
        if self._stopped:
            return
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="amv-postgres-listen")
        # If LISTEN does not come up quickly the watches poll; they still see
        # everything, only later.
        with suppress(TimeoutError):
            await asyncio.wait_for(self._up.wait(), self._connect_timeout)

    async def stop(self) -> None:
        """Close the connection for good and wake every watch (so that they end)."""
        self._stopped = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
        self._up.clear()
        self._wakeups.wake_all()

    async def _run(self) -> None:
        delay = 0.1
        while not self._stopped:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self.dsn,
                    autocommit=True,
                    connect_timeout=max(1, int(self._connect_timeout)),
                    application_name="agent-mem-vault listen",
                )
                async with conn:
                    await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    self._up.set()
                    delay = 0.1
                    # Anything appended while we were not listening is picked
                    # up by the catch-up read this triggers.
                    self._wakeups.wake_all()
                    async for note in conn.notifies():
                        self._wakeups.wake(note.payload)
            except (psycopg.Error, OSError):
                pass  # the server went away or refused us: wake everyone, retry
            self._up.clear()
            self._wakeups.wake_all()
            await asyncio.sleep(delay)
            delay = min(delay * 2, _MAX_RETRY_DELAY)
