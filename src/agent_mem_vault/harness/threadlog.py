"""The one place a thread's log is read and written, and who may write it.

Ownership across hosts (many hosts on one PostgreSQL, or processes on one
SQLite file) rests on two things, and needs both:

* **A lease** ``log-owner:<stream>``, held by ``host.host_id`` with a TTL.
  A host takes it before it writes, keeps it for ``lease_ttl`` after its
  last write (so a thread stays with the host that serves it), renews it
  every ``lease_ttl / 3`` while a turn runs (a model call may outlast the
  TTL), and gives it up in ``host.close()``. Another host that wants to
  write meanwhile gets ``LogOwnedElsewhereError`` and writes nothing — for
  a plain ``send`` too: a send is not forwarded to the owner (see
  :mod:`.host` for why), the caller sends it there or retries once the
  lease lapses. On one machine (SQLite) a lease whose owner's process died
  is taken over at once (:mod:`.liveness`).
* **Fencing by sequence number.** A lease alone cannot stop a host that
  *believes* it still owns the thread (its process stalled, its database
  connection hung) from writing after the lease lapsed and another host
  took over. So every append names ``expected_seq``, the last record this
  host folded in, and a host that takes over a thread whose log shows a
  turn in flight closes that turn in the log before anything else. The
  stale host's next append then fails with ``LogConflictError``; the turn
  treats that (and a lost lease) as "this thread is no longer mine" and
  stops writing — it never re-reads and carries on. So no turn writes after
  another host closed it, and no turn runs twice.

**What a lease saves.** Every write to a thread's log goes through a
``ThreadLog`` that holds the lease. So while this host has held the lease
without a gap since it last read or appended, nobody else can have written:
:meth:`ThreadLog.catch_up` (the read before a write decides) then reads
nothing from the store. After a gap (the lease lapsed, was lost or given up)
it reads as before; and the fence still checks every append.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.clock import Clock
from ..store import LogConflictError, LogRecord, Persistence
from .errors import LogOwnedElsewhereError
from .log import Record, replay
from .state import ThreadState

if TYPE_CHECKING:
    from .liveness import HostLiveness

__all__ = ["ThreadLog", "lease_name"]

_log = logging.getLogger(__name__)
_NEVER = float("-inf")


def lease_name(stream: str) -> str:
    """The lease that says which host owns (may write) a thread's log."""
    return f"log-owner:{stream}"


@dataclass(eq=False, repr=False)
class ThreadLog:
    """A host's view of one thread's log: its state, kept current, and the writer."""

    persistence: Persistence
    stream: str
    _: KW_ONLY
    owner: str
    lease_ttl: float
    clock: Clock
    liveness: HostLiveness | None = None
    state: ThreadState = field(init=False, default_factory=ThreadState)
    # What readers (snapshots, lists) see. Kept apart from ``state``, which
    # moves only when the writer reads or appends: a read that folded in
    # another host's records while a turn runs would move the turn's
    # ``expected_seq`` past them, and the fence would let it write on.
    _view: ThreadState = field(init=False, default_factory=ThreadState)
    # Until when (on this host's monotonic clock) the lease is surely ours:
    # measured from *before* the acquire that granted it, so it never runs
    # past the expiry the store recorded.
    _lease_until: float = field(init=False, default=_NEVER)
    _renewals: int = field(init=False, default=0)
    # Which unbroken holding of the lease this is (it grows when the lease
    # is taken after a gap), and the holding in which ``state`` was last
    # read or appended to (None: not while holding one).
    _holding: int = field(init=False, default=0)
    _synced: int | None = field(init=False, default=None)

    @property
    def renewing_now(self) -> bool:
        """Whether a long step keeps the lease renewed now (the host must keep this log)."""
        return self._renewals > 0

    @property
    def holds_lease(self) -> bool:
        """Whether this host may still hold the lease (a host must not forget such a log)."""
        return self.clock.monotonic() < self._lease_until

    @property
    def lease_until(self) -> float:
        """Until when (this host's monotonic clock) the lease is surely ours; -inf if not held."""
        return self._lease_until

    def adopt_lease(self, until: float) -> None:
        """Take over what an earlier ``ThreadLog`` of this stream on this host knew of the lease.

        The host forgets the state of an idle thread but not its lease: the
        next ``ThreadLog`` of the stream then renews it on schedule instead of
        asking the store before its first write, and gives it up on close.
        """
        self._lease_until = max(self._lease_until, until)

    @property
    def renew_every(self) -> float:
        """Seconds between renewals while a turn runs: two may fail before the lease lapses."""
        return self.lease_ttl / 3

    async def refresh(self) -> ThreadState:
        """Fold in whatever was appended since this host last read (writers only)."""
        records = await self.persistence.read(self.stream, after=self.state.seq)
        replay(records, self.state)
        self._synced = self._holding if self.holds_lease else None
        return self.state

    async def catch_up(self) -> ThreadState:
        """``refresh()``, unless the lease was held without a gap since the last read or append.

        Then nobody else can have appended (see the module doc), and the
        state is the log as it stands: a turn on a thread this host serves
        asks the store for nothing before it writes.
        """
        if self._synced is not None and self._synced == self._holding and self.holds_lease:
            return self.state
        return await self.refresh()

    async def view(self) -> ThreadState:
        """The log as it is now, for reading: never the state a writer decides from."""
        records = await self.persistence.read(self.stream, after=self._view.seq)
        return replay(records, self._view)

    async def own(self) -> None:
        """Hold the log's lease, or raise ``LogOwnedElsewhereError``.

        Within the first half of a lease nothing is asked of the store: the
        lease cannot have moved yet. Later, the lease is renewed (or taken).
        """
        now = self.clock.monotonic()
        if self._renewal_due(now):
            await self._acquire(now)

    def _renewal_due(self, now: float) -> bool:
        """Past the first half of the lease (or without one): the store is asked again."""
        return now >= self._lease_until - self.lease_ttl / 2

    async def _acquire(self, now: float) -> None:
        if now >= self._lease_until:
            self._holding += 1  # a gap: another host may have written since
        name = lease_name(self.stream)
        lease = await self.persistence.acquire_lease(name, self.owner, self.lease_ttl)
        if lease.owner != self.owner and self.liveness and self.liveness.is_dead(lease.owner):
            # Its process ended on this machine: nobody can write for it any more.
            _log.info("taking %s over from %s, whose process ended", self.stream, lease.owner)
            await self.persistence.release_lease(name, lease.owner)
            lease = await self.persistence.acquire_lease(name, self.owner, self.lease_ttl)
        if lease.owner != self.owner:
            self._lease_until = _NEVER
            self._synced = None
            raise LogOwnedElsewhereError(
                f"another host ({lease.owner}) owns the log of this thread until "
                f"{lease.expires_at.isoformat()}; send through that host or retry after it lapses",
                stream=self.stream,
                owner=lease.owner,
                expires_at=lease.expires_at.isoformat(),
            )
        self._held_from(now)

    def _held_from(self, now: float) -> None:
        """The store granted the lease to a request made at ``now`` (monotonic)."""
        self._lease_until = now + self.lease_ttl
        if self.liveness is not None:
            self.liveness.touch()

    @asynccontextmanager
    async def renewing(self) -> AsyncIterator[None]:
        """Keep renewing the lease while a long step (a turn, a model call) runs.

        A model call may take longer than the lease; without renewal another
        host could take the thread over in the middle of a live turn. A renewal
        that fails (the database is briefly away) is retried sooner; one that
        finds another owner stops renewing, and the turn's next append fails.

        A step shorter than a renewal period (most turns) costs one timer: the
        task that renews is started only when a renewal is due.
        """
        loop = asyncio.get_running_loop()
        renewal: asyncio.Task[None] | None = None
        timer: asyncio.TimerHandle | None = None
        stopped = False

        async def renew() -> None:
            nonlocal timer
            delay = self.renew_every
            try:
                await self._acquire(self.clock.monotonic())
            except LogOwnedElsewhereError:
                return  # lost: the next append asks the store again (and is fenced)
            except Exception as exc:  # the store is briefly away: never kill the turn
                _log.warning("renewing the lease of %s failed: %s", self.stream, exc)
                delay = max(self.renew_every / 4, 0.01)
            if not stopped:
                timer = loop.call_later(delay, due)

        def due() -> None:
            nonlocal renewal
            renewal = asyncio.create_task(renew(), name=f"renew {lease_name(self.stream)}")

        timer = loop.call_later(self.renew_every, due)
        self._renewals += 1
        try:
            yield
        finally:
            self._renewals -= 1
            stopped = True
            timer.cancel()
            # Stopped, not cancelled: a renewal in flight ends its statement
            # (cancelling a database call half way costs more than waiting).
            if renewal is not None:
                await renewal

    async def release(self) -> None:
        """Give the lease up (when this host closes), so another host need not wait it out."""
        if self._lease_until != _NEVER:
            self._lease_until = _NEVER
            self._synced = None
            await self.persistence.release_lease(lease_name(self.stream), self.owner)

    async def append(self, records: Sequence[Record]) -> ThreadState:
        """Append after the last record this host saw, or fail with nothing written.

        On ``LogConflictError`` the state is refreshed (so the caller can see
        what the other writer did) and the error is raised: the caller decides
        again from the new state; it must not simply append once more.
        """
        if not records:
            return self.state
        try:
            written = await self._append_owning(list(records))
        except LogConflictError:
            await self.refresh()
            raise
        replay(written, self.state)
        # The fence held: nobody had written since this host's last read, and
        # with the lease still held, nobody has since.
        self._synced = self._holding if self.holds_lease else None
        return self.state

    async def _append_owning(self, records: list[Record]) -> list[LogRecord]:
        """Append, holding the lease: taken or renewed in the append's own write when due.

        What :meth:`own` then ``append`` do, in one commit where they take two
        (a new thread's first send, a renewal due). When somebody else holds
        the lease nothing was written, and :meth:`own` decides as it always
        does (a dead host's lease is taken over, a live one's refuses).
        """
        now = self.clock.monotonic()
        if not self._renewal_due(now):
            return await self.persistence.append(self.stream, records, expected_seq=self.state.seq)
        written, lease = await self.persistence.append_owned(
            self.stream,
            records,
            expected_seq=self.state.seq,
            lease=lease_name(self.stream),
            owner=self.owner,
            ttl=self.lease_ttl,
        )
        if lease.owner != self.owner:
            await self._acquire(now)  # raises unless the holder's process is dead
            return await self.persistence.append(self.stream, records, expected_seq=self.state.seq)
        if now >= self._lease_until:
            self._holding += 1  # a gap, as in ``_acquire``
        self._held_from(now)
        return written

    async def append_one(self, kind: str, data: dict[str, Any]) -> ThreadState:
        return await self.append([(kind, data)])
