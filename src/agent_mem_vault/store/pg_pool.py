"""The PostgreSQL store's connections: a few, opened when a call needs one, checked
before each use, and nothing running in the background.

What a pool of its own buys over a general one such as ``psycopg_pool``:

* **A connection killed while idle is not handed out.** A failover, a proxy's
  idle timeout or ``pg_terminate_backend`` leaves the pool holding sockets
  whose server is gone. The server says goodbye before it closes (an error
  message, then the end of the stream), so such a socket has something to
  read while a healthy idle one has nothing: :meth:`Pool.get` looks (one
  ``poll``, no round trip) and makes a round trip only when something came.
  A connection that dies in the middle of a statement is the caller's to handle
  (``postgres.py`` retries what is safe to retry and settles what is not).
* **The first call after PostgreSQL comes back connects at once.** No
  background worker reconnects with a growing back-off: a call that finds no
  usable connection opens one, trying again every ``RETRY_EVERY`` seconds
  until its deadline while the server is down or starting.
* **A process ends promptly, whatever state its connections are in.** No
  task and no thread outlives the call that started it, so an event loop that
  ends (or a store never closed) leaves nothing that waits or reconnects.
"""

from __future__ import annotations

import asyncio
import select
import time
from collections import deque
from contextlib import suppress
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

__all__ = ["RETRY_EVERY", "Pool", "PoolClosedError", "PoolTimeoutError", "retry_connect"]

RETRY_EVERY = 0.2
"""Seconds between two connection attempts of one call while the server is away."""

# SQLSTATEs a server answers while it cannot take a connection for a moment:
# shutting down (57P01, 57P02), starting up (57P03), too many clients (53300).
_TRANSIENT_STATES = frozenset({"57P01", "57P02", "57P03", "53300"})


class PoolClosedError(Exception):
    """The pool was closed: no connection is handed out any more."""


class PoolTimeoutError(Exception):
    """No connection came before the deadline; ``__cause__`` is the last refusal, if any."""


def retry_connect(exc: psycopg.OperationalError) -> bool:
    """Whether a failed connection attempt may succeed if tried again soon: the server
    did not answer (refused, unreachable) or said it cannot take one right now. A
    refusal that says who (a password, a database that does not exist) is final."""
    state = exc.sqlstate
    return state is None or state in _TRANSIENT_STATES or state.startswith("08")


def _quiet(conn: psycopg.AsyncConnection[Any]) -> bool:
    """Whether nothing arrived on an idle connection's socket since it was last used."""
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return False
    return not readable


class Pool:
    """Up to ``max_size`` autocommit connections to ``conninfo``, shared by one event loop."""

    def __init__(self, conninfo: str, *, max_size: int, kwargs: dict[str, Any]) -> None:
        self.conninfo = conninfo
        self.max_size = max_size
        self.kwargs = kwargs
        self._idle: deque[psycopg.AsyncConnection[Any]] = deque()
        self._size = 0
        """Connections open or being opened: idle, in use, and connecting."""
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._closed = False

    async def get(self, deadline: float) -> psycopg.AsyncConnection[Any]:
        """A usable connection, by ``deadline`` (``time.monotonic``) or ``PoolTimeoutError``."""
        while True:
            if self._closed:
                raise PoolClosedError
            while self._idle:
                conn = self._idle.pop()  # the most recently used: the likeliest alive
                if await self._usable(conn):
                    return conn
                await self._discard(conn)
            if self._size < self.max_size:
                self._size += 1
                try:
                    return await self._connect(deadline)
                except BaseException:
                    self._size -= 1
                    self._wake_one()
                    raise
            await self._wait(deadline)

    async def put(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Give ``conn`` back: kept if it is idle and sound, else closed."""
        status = conn.pgconn.transaction_status
        if self._closed or conn.closed or conn.broken or status != TransactionStatus.IDLE:
            await self._discard(conn)
            return
        self._idle.append(conn)
        self._wake_one()

    async def close(self) -> None:
        """Close the idle connections; those in use are closed when given back."""
        self._closed = True
        idle, self._idle = list(self._idle), deque()
        for conn in idle:
            await self._discard(conn)
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    async def _usable(self, conn: psycopg.AsyncConnection[Any]) -> bool:
        if conn.closed or conn.broken:
            return False
        if _quiet(conn):
            return True
        # Something came unasked: most likely the server's farewell. One round trip
        # tells it from a notice.
        try:
            await conn.execute("")
        except psycopg.Error:
            return False
        return True

    async def _discard(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self._size -= 1
        self._wake_one()
        with suppress(psycopg.Error):  # already gone: nothing left to close
            await conn.close()

    async def _connect(self, deadline: float) -> psycopg.AsyncConnection[Any]:
        """A new connection, trying again while the server is away, until ``deadline``."""
        while True:
            left = deadline - time.monotonic()
            try:
                return await psycopg.AsyncConnection.connect(
                    self.conninfo,
                    autocommit=True,
                    connect_timeout=max(2, int(left + 0.999)),
                    **self.kwargs,
                )
            except psycopg.OperationalError as exc:
                left = deadline - time.monotonic()
                if not retry_connect(exc) or left <= RETRY_EVERY or self._closed:
                    raise
            await asyncio.sleep(RETRY_EVERY)

    async def _wait(self, deadline: float) -> None:
        """Wait until a connection is given back or closed (or ``deadline``)."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise PoolTimeoutError
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, left)
        except TimeoutError:
            raise PoolTimeoutError from None
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
