"""Wake-ups for ``watch``: futures waiting for a stream to grow, woken from any thread.

Every backend's ``watch`` registers a future before it reads (so an append
that lands during the read still wakes the next round: no lost wake-up),
and removes it when it stops waiting, also when it is cancelled (so a
client that went away leaves nothing behind). An append wakes the stream's
futures with ``call_soon_threadsafe``, since the watch may run on another
thread's loop; a future whose loop has already closed is skipped: its watch
is gone, and an append that committed must never fail because of it.
"""

from __future__ import annotations

import asyncio
import threading
from contextlib import suppress

__all__ = ["Wakeups"]

# Per stream, each waiting future and the loop it belongs to (a dict, so that
# a watch leaving is O(1) even with thousands of clients on one stream).
_Waiters = dict["asyncio.Future[None]", asyncio.AbstractEventLoop]


class Wakeups:
    """The watches waiting on each stream of one persistence handle.

    >>> wakeups = Wakeups()
    >>> async def one_round():
    ...     fut = wakeups.register("thread:1")
    ...     wakeups.wake("thread:1")
    ...     await fut
    >>> asyncio.run(one_round())
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, _Waiters] = {}

    def register(self, stream: str) -> asyncio.Future[None]:
        """A future of the running loop that the next ``wake(stream)`` resolves."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        with self._lock:
            self._waiting.setdefault(stream, {})[fut] = loop
        return fut

    def discard(self, stream: str, fut: asyncio.Future[None]) -> None:
        """Forget ``fut`` (woken or not); call it in a ``finally`` around the wait."""
        with self._lock:
            waiters = self._waiting.get(stream)
            if waiters is None:
                return
            waiters.pop(fut, None)
            if not waiters:
                del self._waiting[stream]

    def wake(self, stream: str) -> None:
        """Resolve every future waiting on ``stream``, whichever loop it belongs to."""
        with self._lock:
            waiters = self._waiting.pop(stream, {})
        _resolve(waiters)

    def wake_all(self) -> None:
        """Resolve every waiting future (the source of notifications went away)."""
        with self._lock:
            waiters = {fut: loop for ws in self._waiting.values() for fut, loop in ws.items()}
            self._waiting.clear()
        _resolve(waiters)

    def count(self) -> int:
        """How many futures are waiting: 0 once every watch has stopped."""
        with self._lock:
            return sum(len(ws) for ws in self._waiting.values())


def _resolve(waiters: _Waiters) -> None:
    for fut, loop in waiters.items():
        # A closed loop raises RuntimeError: its watch ended with it.
        with suppress(RuntimeError):
            loop.call_soon_threadsafe(_set, fut)


def _set(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
